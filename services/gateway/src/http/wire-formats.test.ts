/**
 * Each wire format's plugin answers in its own error format, in process (`app.inject`, no
 * sockets): the same bad request to the OpenAI API, Gemini's and the management API, each
 * answered in the body its clients parse. A real Redis behind it, as in production.
 */
import { describe, expect, it } from 'vitest';
import { useTestGateway } from '../../test/test-gateway.ts';

const gateway = useTestGateway();

const openaiError = (code: string) => ({ error: { message: expect.any(String), type: expect.any(String), param: null, code } });
const geminiError = (code: number, status: string) => ({ error: { code, message: expect.any(String), status } });
const managementError = { success: false, message: expect.any(String) };

describe('each API answers in its own wire format', () => {
  it('an unknown path: OpenAI, Gemini or management 404, by the prefix it falls under', async () => {
    const openai = await gateway.app.inject({ method: 'GET', url: '/v1/no-such-thing' });
    expect(openai.statusCode).toBe(404);
    expect(openai.json()).toEqual(openaiError('not_found'));
    const gemini = await gateway.app.inject({ method: 'GET', url: '/v1beta/no-such-thing' });
    expect(gemini.statusCode).toBe(404);
    expect(gemini.json()).toEqual(geminiError(404, 'NOT_FOUND'));
    for (const url of ['/api/no-such-thing', '/no-such-thing']) {
      const management = await gateway.app.inject({ method: 'GET', url });
      expect(management.statusCode).toBe(404);
      expect(management.json()).toEqual(managementError);
    }
  });

  it('no credentials: 401 in each format, before the body is read', async () => {
    const openai = await gateway.app.inject({ method: 'POST', url: '/v1/completions', payload: { model: 'm', prompt: 'p' } });
    expect(openai.statusCode).toBe(401);
    expect(openai.json()).toEqual(openaiError(expect.any(String)));
    expect(openai.json().error.type).toBe('invalid_request_error');
    const gemini = await gateway.app.inject({ method: 'POST', url: '/v1beta/models/m:generateContent', payload: { contents: [] } });
    expect(gemini.statusCode).toBe(401);
    expect(gemini.json()).toEqual(geminiError(401, 'UNAUTHENTICATED'));
    const management = await gateway.app.inject({ method: 'GET', url: '/api/user/self' });
    expect(management.statusCode).toBe(401);
    expect(management.json()).toEqual(managementError);
  });

  it('a malformed JSON body from a valid caller: 400 in the route\'s format', async () => {
    const headers = { authorization: `Bearer ${gateway.key}`, 'content-type': 'application/json' };
    const openai = await gateway.app.inject({ method: 'POST', url: '/v1/completions', headers, payload: '{"model":' });
    expect(openai.statusCode).toBe(400);
    expect(openai.json()).toEqual(openaiError('invalid_request'));
    expect(openai.json().error.message).toMatch(/malformed JSON/);
    const gemini = await gateway.app.inject({ method: 'POST', url: '/v1beta/models/m:generateContent', headers, payload: '{"contents":' });
    expect(gemini.statusCode).toBe(400);
    expect(gemini.json()).toEqual(geminiError(400, 'INVALID_ARGUMENT'));
    expect(gemini.json().error.message).toMatch(/malformed JSON/);
    const management = await gateway.app.inject({ method: 'POST', url: '/api/user/login', headers: { 'content-type': 'application/json' }, payload: '{"username":' });
    expect(management.statusCode).toBe(400);
    expect(management.json()).toEqual(managementError);
    expect(management.json().message).toMatch(/malformed JSON/);
  });

  it('a request from a gateway worker (a channel pointing back at a gateway): 508 in each format', async () => {
    const headers = { 'x-gateway-hop': '1' };
    expect((await gateway.app.inject({ method: 'GET', url: '/v1/models', headers })).json()).toEqual(openaiError('loop_detected'));
    expect((await gateway.app.inject({ method: 'GET', url: '/v1beta/models', headers })).json()).toEqual(geminiError(508, expect.any(String)));
    const management = await gateway.app.inject({ method: 'GET', url: '/api/user/self', headers });
    expect(management.statusCode).toBe(508);
    expect(management.json()).toEqual(managementError);
  });
});

/** The same bad request to each API, from a caller it accepts; each names its own error body. */
const apis = [
  { name: 'OpenAI', url: '/v1/completions', prefix: '/v1', headers: () => ({ authorization: `Bearer ${gateway.key}` }), error: () => openaiError(expect.any(String)) as object },
  { name: 'Gemini', url: '/v1beta/models/m:generateContent', prefix: '/v1beta', headers: () => ({ 'x-goog-api-key': gateway.key }), error: (status: number) => geminiError(status, expect.any(String)) as object },
  { name: 'management', url: '/api/user/login', prefix: '/api', headers: () => ({}), error: () => managementError as object },
];

const messageOf = (body: any): string => body.error?.message ?? body.message;

describe.each(apis)('the $name API answers the body parser in its own format', (api) => {
  const post = (payload: string, contentType = 'application/json') =>
    gateway.app.inject({ method: 'POST', url: api.url, payload, headers: { 'content-type': contentType, ...api.headers() } });

  it('a body that is not JSON: 415', async () => {
    const reply = await post('model=m', 'text/plain');
    expect(reply.statusCode).toBe(415);
    expect(reply.json()).toEqual(api.error(415));
    expect(messageOf(reply.json())).toMatch(/Content-Type/);
  });

  it('a body nested too deeply: 400 naming where', async () => {
    const reply = await post(`{"a":${'['.repeat(40)}${']'.repeat(40)}}`);
    expect(reply.statusCode).toBe(400);
    // The body names the field (OpenAI's `param`, Gemini's `details`), so only its shape is compared.
    expect(Object.keys(reply.json())).toEqual(Object.keys(api.error(400)));
    expect(messageOf(reply.json())).toMatch(/nested too deeply/);
  });

  it('a body past the route\'s limit: 413', async () => {
    const reply = await post(JSON.stringify({ model: 'm', prompt: 'x'.repeat(2 * 1024 * 1024) }));
    expect(reply.statusCode).toBe(413);
    expect(reply.json()).toEqual(api.error(413));
  });

  it('a URL that is not valid percent-encoding: 400, the query string never echoed', async () => {
    const reply = await gateway.app.inject({ method: 'GET', url: `${api.prefix}/models%zz?key=secret-in-query` });
    expect(reply.statusCode).toBe(400);
    expect(reply.json()).toEqual(api.error(400));
    expect(messageOf(reply.json())).toMatch(/malformed URL/);
    expect(reply.body).not.toContain('secret-in-query');
  });
});

describe("Anthropic's Messages door answers in Anthropic's error shape", () => {
  const anthropicError = (type: string) => ({ type: 'error', error: { type, message: expect.any(String) } });
  const post = (payload: string, headers: Record<string, string> = { 'x-api-key': gateway.key }, contentType = 'application/json') =>
    gateway.app.inject({ method: 'POST', url: '/v1/messages', payload, headers: { 'content-type': contentType, ...headers } });

  it('no key or an unknown one: 401 authentication_error, the key taken from x-api-key or a Bearer header', async () => {
    const none = await post('{}', {});
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual(anthropicError('authentication_error'));
    expect(none.json().error.message).toMatch(/x-api-key/);
    expect((await post('{}', { 'x-api-key': 'sk-unknown' })).json()).toEqual(anthropicError('authentication_error'));
    // A known key in either header gets past authentication to validation.
    for (const headers of [{ 'x-api-key': gateway.key }, { authorization: `Bearer ${gateway.key}` }] as Record<string, string>[]) {
      const invalid = await post('{"model":"m","messages":[{"role":"user","content":"hi"}]}', headers);
      expect(invalid.statusCode).toBe(400);
      expect(invalid.json()).toEqual(anthropicError('invalid_request_error'));
      expect(invalid.json().error.message).toMatch(/max_tokens/);
    }
  });

  it('the body parser\'s refusals: 400 malformed JSON, 415, 413 request_too_large', async () => {
    const malformed = await post('{"model":');
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual(anthropicError('invalid_request_error'));
    const text = await post('model=m', undefined, 'text/plain');
    expect(text.statusCode).toBe(415);
    expect(text.json()).toEqual(anthropicError('invalid_request_error'));
    const large = await post(JSON.stringify({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'x'.repeat(2 * 1024 * 1024) }] }));
    expect(large.statusCode).toBe(413);
    expect(large.json()).toEqual(anthropicError('request_too_large'));
  });
});
