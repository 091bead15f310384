/**
 * Every JSON body, before any route sees it: Fastify's own parser (which refuses `__proto__` and
 * `constructor` poisoning), then one pass over the parsed value that refuses what would hurt
 * later: nesting deeper than any real request (the queue's serializers would overflow their
 * stack on it), objects with more fields than any real request (MAX_JSON_OBJECT_KEYS), and
 * ill-formed Unicode (a lone UTF-16 surrogate cannot be stored or relayed as
 * UTF-8). Each is a 400 that names the field.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest } from '@gateway/contracts';
import { PAYLOAD_INLINE_MAX_CHARS } from '@gateway/queue';

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body's length in characters, once parsed (0 without one): how large its job's payload is, about. */
    bodyChars: number;
    /** A large JSON body's bytes as they came (null for a smaller one), for a route that stores them as they are. */
    jsonBytes: Buffer | null;
  }
}

/** Real bodies nest a handful of levels (Gemini's `contents[].parts[].inlineData` is five). */
export const MAX_JSON_DEPTH = 32;

/**
 * No object of a real request has this many fields (OpenAI's `logit_bias` holds at most 300);
 * a map of half a million is refused before anything walks it.
 */
export const MAX_JSON_OBJECT_KEYS = 1000;

/** Where a value sits: its parent's place and its own key. The field's name is built only for an error. */
interface Place { parent: Place | undefined; key: string | number; depth: number }

function fieldName(place: Place | undefined): string {
  let name = '';
  for (let p = place; p; p = p.parent) name = typeof p.key === 'number' ? `[${p.key}]${name}` : `${p.parent ? '.' : ''}${p.key}${name}`;
  return name || 'body';
}

const stringProblem = (place: Place | undefined) =>
  ({ field: fieldName(place), message: `${fieldName(place)} is not valid Unicode text (it holds a lone UTF-16 surrogate)` });

/** The first problem in a parsed JSON value, or undefined. Iterative, so no input can overflow the stack. */
export function jsonShapeProblem(value: unknown): { message: string; field: string } | undefined {
  const pending: { value: unknown; place: Place | undefined }[] = [{ value, place: undefined }];
  while (pending.length > 0) {
    const { value: current, place } = pending.pop()!;
    if (typeof current === 'string') {
      if (!current.isWellFormed()) return stringProblem(place);
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    const depth = place ? place.depth : 0;
    if (depth >= MAX_JSON_DEPTH) {
      return { field: fieldName(place), message: `the body is nested too deeply (more than ${MAX_JSON_DEPTH} levels, at ${fieldName(place)})` };
    }
    if (Array.isArray(current)) {
      // Numbers, booleans and nulls need no check, and strings are checked here: only nested
      // arrays and objects are visited, so a million-token prompt costs one loop, not a million
      // allocations.
      for (let i = current.length - 1; i >= 0; i--) {
        const item: unknown = current[i];
        if (typeof item === 'string') {
          if (!item.isWellFormed()) return stringProblem({ parent: place, key: i, depth: depth + 1 });
        } else if (item !== null && typeof item === 'object') {
          pending.push({ value: item, place: { parent: place, key: i, depth: depth + 1 } });
        }
      }
      continue;
    }
    let keys = 0;
    for (const key in current) {
      if (++keys > MAX_JSON_OBJECT_KEYS) {
        return { field: fieldName(place), message: `${fieldName(place)} has more than ${MAX_JSON_OBJECT_KEYS} fields` };
      }
      if (!key.isWellFormed()) return { field: fieldName(place), message: `${fieldName(place)} has a field name that is not valid Unicode text` };
      const item = (current as Record<string, unknown>)[key];
      if (typeof item === 'string') {
        if (!item.isWellFormed()) return stringProblem({ parent: place, key, depth: depth + 1 });
      } else if (item !== null && typeof item === 'object') {
        pending.push({ value: item, place: { parent: place, key, depth: depth + 1 } });
      }
    }
  }
  return undefined;
}

export function registerJsonBodyParser(app: FastifyInstance): void {
  app.decorateRequest('bodyChars', 0);
  app.decorateRequest('jsonBytes', null);
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // Decoded as Fastify's string parser does (invalid UTF-8 replaced), and the bytes kept.
    const text = (body as Buffer).toString('utf8');
    request.bodyChars = text.length;
    // Kept only for a body large enough to go beside its job (the only use of the bytes).
    if (text.length > PAYLOAD_INLINE_MAX_CHARS) request.jsonBytes = body as Buffer;
    parse(request, text, (error, value) => {
      if (error) return done(error, undefined);
      const problem = jsonShapeProblem(value);
      if (problem) return done(badRequest(problem.message, problem.field), undefined);
      done(null, value);
    });
  });
}
