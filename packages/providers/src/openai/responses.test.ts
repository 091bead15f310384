import { describe, expect, it } from 'vitest';
import { UpstreamError, type ResponsesRequest } from '@gateway/contracts';
import { responses } from './responses.ts';

const request = { model: 'client-model', input: 'hi', tools: [{ type: 'web_search_preview' }], truncation: 'auto', background: true } as ResponsesRequest;

describe('the Responses door passed through to an upstream of the Responses API', () => {
  it('sends the request as it came, keys in order, with the upstream model and without background', () => {
    const sent = responses.toUpstream(request, 'upstream-model', false);
    expect(JSON.stringify(sent)).toBe('{"model":"upstream-model","input":"hi","tools":[{"type":"web_search_preview"}],"truncation":"auto"}');
    expect(responses.toUpstream({ ...request, stream: false }, 'upstream-model', false)).toMatchObject({ stream: false });
    expect(responses.toUpstream(request, 'upstream-model', true)).toMatchObject({ stream: true });
  });

  it('leaves previous_response_id behind: the input already holds the conversation the gateway rebuilt, and the id is the gateway\'s', () => {
    const sent = responses.toUpstream({ ...request, previous_response_id: 'resp_gateway_1' }, 'upstream-model', false);
    expect(sent).not.toHaveProperty('previous_response_id');
  });

  it('gives back the upstream\'s events as they came, type and number first, the response under the client\'s model', () => {
    const event = responses.fromEvent({ response: { id: 'resp_1', model: 'upstream-model', usage: null }, sequence_number: 0, type: 'response.created' }, request, {});
    expect(JSON.stringify(event)).toBe('{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","model":"client-model","usage":null}}');
    expect(responses.fromEvent({ type: 'response.output_text.delta', sequence_number: 4, delta: 'x', logprobs: [] }, request, {})).toEqual({ type: 'response.output_text.delta', sequence_number: 4, delta: 'x', logprobs: [] });
  });

  it('takes an error event, a failed response and an event without a number for failures, not for events', () => {
    expect(() => responses.fromEvent({ type: 'error', sequence_number: 3, code: 'server_error', message: 'boom' }, request, {})).toThrow(/boom/);
    expect(() => responses.fromEvent({ type: 'response.failed', sequence_number: 3, response: { error: { code: 'server_error', message: 'it broke' } } }, request, {})).toThrow(/it broke/);
    expect(() => responses.fromEvent({ type: 'response.created' }, request, {})).toThrow(UpstreamError);
  });

  it('reads a whole reply: its usage zero where it gave none (the worker then estimates), a failed one and an error body as failures', () => {
    const reply = responses.fromReply({ id: 'resp_1', object: 'response', status: 'completed', model: 'upstream-model', output: [], usage: null }, request);
    expect(reply).toMatchObject({ id: 'resp_1', model: 'client-model', usage: { input_tokens: 0, output_tokens: 0 } });
    expect(() => responses.fromReply({ id: 'resp_1', object: 'response', status: 'failed', output: [], error: { message: 'no capacity' } }, request)).toThrow(/no capacity/);
    expect(() => responses.fromReply({ error: { message: 'bad key' } }, request)).toThrow(/bad key/);
    expect(() => responses.fromReply({ choices: [] }, request)).toThrow(/not a response/);
  });
});
