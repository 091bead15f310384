/**
 * The `wire` route constraint: which wire format a request under a prefix two formats share
 * (`/v1`) speaks, by how it presents its key. Gemini's clients send `x-goog-api-key` (or
 * `?key=`); OpenAI's send a Bearer header. Only routes that exist in both formats (`GET
 * /v1/models[/…]`) are constrained; a request that derives `openai` falls back to the
 * unconstrained OpenAI route.
 */
import type { ConstraintStrategy } from 'find-my-way';
import type { IncomingMessage } from 'node:http';

const hasKeyQuery = (url: string | undefined) => url !== undefined && /[?&]key=/.test(url);

export const wireConstraint: ConstraintStrategy<any, string> = {
  name: 'wire',
  storage() {
    const handlers = new Map<string, unknown>();
    return {
      get: (value: string) => (handlers.get(value) ?? null) as never,
      set: (value: string, store: unknown) => void handlers.set(value, store),
    };
  },
  deriveConstraint: (req: IncomingMessage) => (req.headers['x-goog-api-key'] !== undefined || hasKeyQuery(req.url) ? 'gemini' : 'openai'),
  mustMatchWhenDerived: false,
};
