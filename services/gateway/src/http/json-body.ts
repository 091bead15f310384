/**
 * Every JSON body, before any route sees it: Fastify's own parser (which refuses `__proto__` and
 * `constructor` poisoning), then one pass over the parsed value that refuses what would hurt
 * later (`jsonShapeProblem`: too deep, too many fields, ill-formed Unicode), a 400 that names
 * the field.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, jsonShapeProblem, type GatewayError } from '@gateway/contracts';
import { PAYLOAD_INLINE_MAX_CHARS } from '@gateway/queue';

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body's length in characters, once parsed (0 without one): how large its job's payload is, about. */
    bodyChars: number;
    /** A large JSON body's bytes as they came (null for a smaller one), for a route that stores them as they are. */
    jsonBytes: Buffer | null;
  }
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
      if (error) return done(prototypeRefusal(text) ?? error, undefined);
      const problem = jsonShapeProblem(value);
      if (problem) return done(badRequest(problem.message, problem.field), undefined);
      done(null, value);
    });
  });
}

/**
 * A body Fastify's parser refused though it is JSON: it holds `__proto__` or
 * `constructor.prototype`, which the parser refuses rather than let them reach an object's
 * prototype. Said so, instead of "malformed JSON". Only looked at for a body already refused.
 */
function prototypeRefusal(text: string): GatewayError | undefined {
  try {
    JSON.parse(text);
  } catch {
    return undefined;
  }
  return badRequest('the body may not hold a "__proto__" field, nor a "constructor" with a "prototype"');
}
