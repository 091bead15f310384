/**
 * Every JSON body, before any route sees it: Fastify's own parser (which refuses `__proto__` and
 * `constructor` poisoning), then one pass over the parsed value that refuses what would hurt
 * later: nesting deeper than any real request (the queue's serializers would overflow their
 * stack on it) and ill-formed Unicode (a lone UTF-16 surrogate cannot be stored or relayed as
 * UTF-8). Both are a 400 that names the field.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest } from '@gateway/contracts';

/** Real bodies nest a handful of levels (Gemini's `contents[].parts[].inlineData` is five). */
export const MAX_JSON_DEPTH = 32;

/** Where a value sits: its parent's place and its own key. The field's name is built only for an error. */
interface Place { parent: Place | undefined; key: string | number; depth: number }

function fieldName(place: Place | undefined): string {
  let name = '';
  for (let p = place; p; p = p.parent) name = typeof p.key === 'number' ? `[${p.key}]${name}` : `${p.parent ? '.' : ''}${p.key}${name}`;
  return name || 'body';
}

/** The first problem in a parsed JSON value, or undefined. Iterative, so no input can overflow the stack. */
export function jsonShapeProblem(value: unknown): { message: string; field: string } | undefined {
  const pending: { value: unknown; place: Place | undefined }[] = [{ value, place: undefined }];
  while (pending.length > 0) {
    const { value: current, place } = pending.pop()!;
    if (typeof current === 'string') {
      if (!current.isWellFormed()) return { field: fieldName(place), message: `${fieldName(place)} is not valid Unicode text (it holds a lone UTF-16 surrogate)` };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    const depth = place ? place.depth : 0;
    if (depth >= MAX_JSON_DEPTH) {
      return { field: fieldName(place), message: `the body is nested too deeply (more than ${MAX_JSON_DEPTH} levels, at ${fieldName(place)})` };
    }
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) pending.push({ value: current[i], place: { parent: place, key: i, depth: depth + 1 } });
      continue;
    }
    for (const key in current) {
      if (!key.isWellFormed()) return { field: fieldName(place), message: `${fieldName(place)} has a field name that is not valid Unicode text` };
      pending.push({ value: (current as Record<string, unknown>)[key], place: { parent: place, key, depth: depth + 1 } });
    }
  }
  return undefined;
}

export function registerJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parse(request, body as string, (error, value) => {
      if (error) return done(error, undefined);
      const problem = jsonShapeProblem(value);
      if (problem) return done(badRequest(problem.message, problem.field), undefined);
      done(null, value);
    });
  });
}
