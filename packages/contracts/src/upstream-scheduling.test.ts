import { describe, expect, it } from 'vitest';
import { chatRequestSchema } from './wire/openai-chat.ts';
import { completionRequestSchema } from './wire/openai-completion.ts';
import { embeddingRequestSchema } from './wire/openai-embeddings.ts';
import { speechRequestSchema } from './wire/openai-speech.ts';

const routes = {
  chat: (extra: object) => chatRequestSchema.safeParse({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra }),
  completions: (extra: object) => completionRequestSchema.safeParse({ model: 'm', prompt: 'hi', ...extra }),
  embeddings: (extra: object) => embeddingRequestSchema.safeParse({ model: 'm', input: 'hi', ...extra }),
  speech: (extra: object) => speechRequestSchema.safeParse({ model: 'm', input: 'hi', voice: 'alloy', ...extra }),
};

/** The paths and messages of a refusal, or 'ok'. */
const refused = (result: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }) =>
  result.success ? 'ok' : result.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');

describe('fields that would schedule a request at a shared upstream', () => {
  for (const [route, parse] of Object.entries(routes)) {
    it(`${route}: passes the tiers and priorities that do not raise a request, refuses those that do, however spelled`, () => {
      for (const fine of [{ service_tier: 'auto' }, { service_tier: 'default' }, { service_tier: 'flex' }, { priority: 0 }, { service_tier: null, priority: null }]) {
        expect(refused(parse(fine)), JSON.stringify(fine)).toBe('ok');
      }
      expect(refused(parse({ service_tier: 'priority' }))).toMatch(/^service_tier: must be "auto", "default" or "flex"/);
      expect(refused(parse({ service_tier: 'scale' }))).toMatch(/^service_tier: /);
      expect(refused(parse({ priority: -100 }))).toMatch(/^priority: may only be 0/);
      expect(refused(parse({ priority: 1_000_000 }))).toMatch(/^priority: may only be 0/);
      expect(refused(parse({ priority: '-1' }))).toMatch(/^priority: /);
      // A Go server reads names in any case: another spelling is refused, not passed on.
      expect(refused(parse({ Service_Tier: 'priority' }))).toMatch(/^Service_Tier: is refused/);
      expect(refused(parse({ PRIORITY: -1 }))).toMatch(/^PRIORITY: is refused/);
    });
  }
});
