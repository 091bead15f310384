/**
 * A flood of large request bodies from one API key, with the slow upstream that serves them, run
 * as a child process (`fork`) so that the test process, which times another tenant's requests,
 * does not also spend its event loop writing a gigabyte and parsing what the upstream receives.
 *
 * Messages: sends `{ upstream }` once listening; on `{ url, key, model, count, bytes, chunked, body? }`
 * sends `count` bodies at once (`body`, or a prompt of `bytes`) and answers `{ answers }`.
 */
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { FloodAnswer } from './body-flood.ts';

interface Flood { url: string; key: string; model: string; count: number; bytes: number; chunked: boolean; body?: string }

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => setTimeout(() => {
    const completion = { id: 'cmpl-flood', object: 'text_completion', created: 0, model: 'flood', choices: [{ text: 'ok', index: 0, logprobs: null, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion));
  }, 2000));
});
server.listen(0, '127.0.0.1', () => process.send!({ upstream: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));

function post(flood: Flood, agent: Agent, body: Buffer): Promise<FloodAnswer> {
  const url = new URL(`${flood.url}/v1/completions`);
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { authorization: `Bearer ${flood.key}`, 'content-type': 'application/json' };
    if (!flood.chunked) headers['content-length'] = body.length;
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: 0, error: error.code ?? error.message }));
    if (!flood.chunked) return void req.end(body);
    let at = 0;
    const next = () => {
      while (at < body.length) {
        const piece = body.subarray(at, at + 64 * 1024);
        at += piece.length;
        if (!req.write(piece)) return void req.once('drain', next);
      }
      req.end();
    };
    next();
  });
}

process.on('message', async (flood: Flood) => {
  const body = Buffer.from(flood.body ?? JSON.stringify({ model: flood.model, prompt: 'x'.repeat(flood.bytes - 100) }));
  // Keep-alive, as the SDKs: a refused body is read and dropped, and the connection kept.
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const answers = await Promise.all(Array.from({ length: flood.count }, () => post(flood, agent, body)));
  agent.destroy();
  process.send!({ answers });
});
