/**
 * Request bodies sent compressed (`Content-Encoding: gzip`, as some SDKs and proxies do): gzip,
 * deflate and br (and zstd where this Node has it) are decompressed before the body is parsed,
 * with the route's body limit applied to the decompressed bytes, so a small body that inflates
 * past it (a zip bomb) is a 413 as soon as it does, not a gigabyte in memory. Any other coding
 * is a 415 that says which are accepted (with `Accept-Encoding`, as RFC 7694 says), never a
 * confusing "not valid JSON"; so is a compressed upload (multipart), which is read as it came.
 */
import { Transform, type Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { badRequest, ownValue, payloadTooLarge, unsupportedMediaType } from '@gateway/contracts';

type Decoder = () => Transform;

const DECODERS: Record<string, Decoder> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};
const zstd = (zlib as { createZstdDecompress?: () => Transform }).createZstdDecompress;
if (typeof zstd === 'function') DECODERS.zstd = () => zstd();

/** What the gateway accepts, as `Accept-Encoding` says it. */
export const ACCEPTED_ENCODINGS = Object.keys(DECODERS).filter((c) => c !== 'x-gzip').join(', ');

const unsupported = (header: string) =>
  unsupportedMediaType(`Content-Encoding "${header}" is not accepted: send the body uncompressed, or with one of ${ACCEPTED_ENCODINGS}`);

const uncompressedOnly = (header: string) =>
  unsupportedMediaType(`Content-Encoding "${header}" is not accepted for an upload (multipart/form-data): send it uncompressed`);

const tooLarge = (limit: number) =>
  payloadTooLarge(`the request body decompresses to more than ${limit} bytes, the limit of this route (BODY_LIMIT_BYTES for model requests, MANAGEMENT_BODY_LIMIT_BYTES elsewhere)`);

const corrupt = (coding: string) =>
  badRequest(`the request body is not valid ${coding} data, as its Content-Encoding says`);

/** The codings a Content-Encoding names, `identity` (no coding) left out. */
const codingsIn = (header: string | undefined) =>
  header === undefined ? [] : header.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c && c !== 'identity');

/** The one coding to undo (of `codings`, from `header`), or undefined for none; throws 415 for what the gateway cannot undo. */
function codingOf(codings: string[], header: string | undefined): string | undefined {
  if (codings.length === 0) return undefined;
  if (codings.length > 1 || !ownValue(DECODERS, codings[0]!)) throw unsupported(header!);
  return codings[0];
}

/**
 * The decompressed body: the route's limit counts decompressed bytes; `receivedEncodedLength`
 * tells Fastify how many bytes came on the wire, for its Content-Length check.
 */
function decoded(payload: Readable, coding: string, limit: number): Readable {
  const decoder = DECODERS[coding]!();
  let size = 0;
  const body = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      done(size > limit ? tooLarge(limit) : null, chunk);
    },
  }) as Transform & { receivedEncodedLength: number };
  body.receivedEncodedLength = 0;
  payload.on('data', (chunk: Buffer) => void (body.receivedEncodedLength += chunk.length));
  decoder.on('error', () => body.destroy(corrupt(coding)));
  // A route that never reads the body (its answer came first) must not make its refusal an
  // uncaught error that ends the process; a route that reads it hears the error itself.
  body.on('error', () => {});
  // Refused part-way (too large, corrupt): stop inflating, and let the rest of the request drain.
  body.on('close', () => {
    if (body.readableEnded) return;
    payload.unpipe(decoder);
    decoder.destroy();
    payload.resume();
  });
  payload.pipe(decoder).pipe(body);
  return body;
}

/** Methods whose bodies Fastify never parses: a body sent with one is left unread, not decoded. */
export const UNPARSED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

export function registerContentDecoding(app: FastifyInstance): void {
  app.addHook('preParsing', async (request, reply, payload) => {
    const hasBody = request.headers['content-length'] !== undefined ? request.headers['content-length'] !== '0' : request.headers['transfer-encoding'] !== undefined;
    if (!hasBody || UNPARSED_METHODS.has(request.method)) return payload;
    const header = request.headers['content-encoding'];
    const codings = codingsIn(header);
    // A multipart upload is read from the request as it came (@fastify/multipart reads the raw
    // stream, not this hook's), so a compressed one, in any coding, is refused rather than misread.
    if (codings.length > 0 && request.headers['content-type']?.toLowerCase().startsWith('multipart/')) {
      reply.header('accept-encoding', 'identity');
      throw uncompressedOnly(header!);
    }
    let coding: string | undefined;
    try {
      coding = codingOf(codings, header);
    } catch (error) {
      reply.header('accept-encoding', ACCEPTED_ENCODINGS);
      throw error;
    }
    if (coding === undefined) return payload;
    return decoded(payload, coding, request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024);
  });
}
