/**
 * Requests Node's HTTP parser refuses before (or while) a route reads them: a Content-Length
 * beside Transfer-Encoding, a bad chunk, headers past their limit, a body that stops arriving.
 * Each is answered, as a route's own errors are, in the wire format of the path it was sent to
 * (`formatForUrl`: OpenAI's under /v1, where Gemini's routes are mounted too, Gemini's under
 * /v1beta, the management API's elsewhere) rather than Fastify's default body, and its connection
 * closed, as Node does. The path is read from the
 * request line when the refused bytes hold it, or is the path of the request the connection was
 * carrying; with neither (nothing of the request could be read), OpenAI's format.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionError, FastifyInstance } from 'fastify';
import { badRequest, headersTooLarge, requestTimedOut, type GatewayError } from '@gateway/contracts';
import { formatForUrl } from './error-formats.ts';

/** The path of the request each connection carries now (the last whose headers were read). */
const pathOfConnection = new WeakMap<Socket, string>();

export function rememberRequestPaths(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    pathOfConnection.set(request.raw.socket, request.url);
    done();
  });
}

function requestPathOf(error: ConnectionError, socket: Socket): string {
  // Node gives the bytes it refused as a Buffer (Fastify's type says otherwise).
  const raw: unknown = error.rawPacket;
  const line = Buffer.isBuffer(raw) ? /^[A-Z]+ (\/\S*) HTTP\//.exec(raw.subarray(0, 8192).toString('latin1')) : null;
  return line?.[1] ?? pathOfConnection.get(socket) ?? '/v1/';
}

function failureOf(error: ConnectionError): GatewayError {
  // Node raises this for the headers' time-out and the whole request's alike.
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return requestTimedOut('the request did not arrive in time (its headers within HEADERS_TIMEOUT_MS, all of it within BODY_TIMEOUT_MS)');
  if (error.code === 'HPE_HEADER_OVERFLOW') return headersTooLarge("the request's headers are larger than the gateway accepts");
  return badRequest(`the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})`);
}

/** Fastify's `clientErrorHandler`: its default's behaviour, in the path's own format. */
export function clientErrorHandler(error: ConnectionError, socket: Socket): void {
  // Reset by the client: nothing to answer, nobody to answer to.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // Not over an answer already begun on this connection (one given from the request's headers
  // while its body is still dropped, a stream): as Node's own handler, only the connection ends.
  const answering = (socket as { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (socket.writable && !answering?.headersSent) {
    const failure = failureOf(error);
    const body = JSON.stringify(formatForUrl(requestPathOf(error, socket)).body(failure));
    socket.write(`HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}
