/**
 * What no JSON a client sends may hold, whichever way it comes (a request body, a line of a batch
 * file): nesting deeper than any real request (the queue's serializers, and JSON.stringify,
 * would overflow their stack on it), objects with more fields than any real request
 * (MAX_JSON_OBJECT_KEYS), and ill-formed Unicode (a lone UTF-16 surrogate cannot be stored or
 * relayed as UTF-8, and two such ids would come back as one).
 */

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
