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

type Path = (string | number)[];

const fieldName = (path: Path) =>
  path.reduce<string>((name, part) => (typeof part === 'number' ? `${name}[${part}]` : name ? `${name}.${part}` : part), '') || 'body';

/** The first problem in a parsed JSON value, or undefined. Iterative, so no input can overflow the stack. */
export function jsonShapeProblem(value: unknown): { message: string; field: string } | undefined {
  const pending: { value: unknown; path: Path }[] = [{ value, path: [] }];
  while (pending.length > 0) {
    const { value: current, path } = pending.pop()!;
    if (typeof current === 'string') {
      if (!current.isWellFormed()) return { field: fieldName(path), message: `${fieldName(path)} is not valid Unicode text (it holds a lone UTF-16 surrogate)` };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) {
      return { field: fieldName(path), message: `the body is nested too deeply (more than ${MAX_JSON_DEPTH} levels, at ${fieldName(path)})` };
    }
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) pending.push({ value: current[i], path: [...path, i] });
      continue;
    }
    for (const [key, item] of Object.entries(current)) {
      if (!key.isWellFormed()) return { field: fieldName(path), message: `${fieldName(path)} has a field name that is not valid Unicode text` };
      pending.push({ value: item, path: [...path, key] });
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
