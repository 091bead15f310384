/**
 * Replies as the client asked for them (issue 40), end to end through the real SDKs: usage with
 * only what the upstream reported, embeddings in the format asked whatever the upstream sent, a
 * usage estimate no script is cheaper by, and a conversation of any size the body limit allows
 * answered, never a 500.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { OpenAIEmbeddings } from '@langchain/openai';
import { postJson, type Stack } from '@gateway/testkit';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  database: true,
  workers: ['completion-worker', 'audio-worker'],
  env: { REQUEST_TIMEOUT_MS: '30000', UPSTREAM_MAX_REPLY_BYTES: '1048576', UPSTREAM_MAX_EVENT_BYTES: '1048576' },
  channelDefaults: { timeout_ms: 20000 },
  startTimeoutMs: 180_000,
});

let seq = 0;
const uniqueModel = () => `fidelity-${++seq}`;
const client = (stack: Stack, key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 });
const usedQuota = async (stack: Stack, id: number): Promise<number> => (await stack.adminData('GET', `/api/token/${id}`)).used_quota;

describe('usage as the upstream reported it', () => {
  it('passes the details an upstream sent and adds none it did not, whole and streamed, chat and completions', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const sdk = client(stack, key);

    // No details from the upstream: none in the reply, not zeros that read as "no cache hit".
    const chat = await sdk.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi there' }] });
    expect(chat.usage).toEqual({ prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 });
    const completion = await sdk.completions.create({ model, prompt: 'hi there' });
    expect(completion.usage).toEqual({ prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 });
    let streamed: OpenAI.CompletionUsage | undefined;
    for await (const chunk of await sdk.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } })) streamed = chunk.usage ?? streamed;
    expect(streamed).toEqual({ prompt_tokens: 1, completion_tokens: 5, total_tokens: 6 });

    // Details the upstream sent: passed as they came, a count it left out left out.
    mock.setBehaviour({ usageFields: { prompt_tokens_details: { cached_tokens: 1 }, completion_tokens_details: { reasoning_tokens: 3, accepted_prediction_tokens: 0 } } });
    const detailed = await sdk.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi there' }] });
    expect(detailed.usage).toEqual({ prompt_tokens: 2, completion_tokens: 5, total_tokens: 7, prompt_tokens_details: { cached_tokens: 1 }, completion_tokens_details: { reasoning_tokens: 3, accepted_prediction_tokens: 0 } });
    let streamedDetails: OpenAI.CompletionUsage | undefined;
    for await (const chunk of await sdk.completions.create({ model, prompt: 'hi', stream: true, stream_options: { include_usage: true } })) streamedDetails = chunk.usage ?? streamedDetails;
    expect(streamedDetails?.prompt_tokens_details).toEqual({ cached_tokens: 1 });
  });

  it('gives embeddings the two counts the upstream sent', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const reply = await client(stack, key).embeddings.create({ model, input: 'three words here', encoding_format: 'float' });
    expect(reply.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
  });
});

describe('embeddings in the format the client asked for', () => {
  it('turns floats from an upstream that ignores encoding_format into the base64 the openai SDK and LangChain ask for', async ({ stack, upstream, channel, apiKey }) => {
    const honest = await upstream.openai();
    const ignoring = await upstream.openai({ embeddingFormat: 'float' });
    const model = uniqueModel();
    const reference = `${model}-reference`;
    await channel(honest, [reference]);
    await channel(ignoring, [model]);
    const { key } = await apiKey();
    const sdk = client(stack, key);
    const expected = (await sdk.embeddings.create({ model: reference, input: 'a text to embed', encoding_format: 'float' })).data[0]!.embedding;

    // The openai SDK asks base64 by default and decodes it: the same vector, not garbage.
    const decoded = await sdk.embeddings.create({ model, input: 'a text to embed' });
    expect(ignoring.requests.at(-1)!.body.encoding_format).toBe('base64');
    expect(decoded.data[0]!.embedding).toHaveLength(expected.length);
    decoded.data[0]!.embedding.forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 5));
    // On the wire: base64 of little-endian float32, as asked.
    const raw = await postJson(`${stack.gateway.url}/v1/embeddings`, { model, input: ['a text to embed', 'another'], encoding_format: 'base64' }, { authorization: `Bearer ${key}` });
    expect(raw.json.data.map((d: { embedding: unknown }) => typeof d.embedding)).toEqual(['string', 'string']);

    // LangChain's OpenAIEmbeddings (the SDK underneath, base64 too).
    const langchain = new OpenAIEmbeddings({ model, apiKey: key, configuration: { baseURL: `${stack.gateway.url}/v1` }, maxRetries: 0 });
    const [vector] = await langchain.embedDocuments(['a text to embed']);
    vector!.forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 5));
  });

  it('turns base64 from an upstream that always sends it into the floats a client asked for', async ({ stack, upstream, channel, apiKey }) => {
    const honest = await upstream.openai();
    const always = await upstream.openai({ embeddingFormat: 'base64' });
    const model = uniqueModel();
    await channel(honest, [`${model}-reference`]);
    await channel(always, [model]);
    const { key } = await apiKey();
    const expected = (await client(stack, key).embeddings.create({ model: `${model}-reference`, input: 'floats please', encoding_format: 'float' })).data[0]!.embedding;
    // Asked float, and asked nothing (OpenAI's default is float).
    for (const body of [{ encoding_format: 'float' }, {}]) {
      const reply = await postJson(`${stack.gateway.url}/v1/embeddings`, { model, input: 'floats please', ...body }, { authorization: `Bearer ${key}` });
      expect(reply.status).toBe(200);
      expect(Array.isArray(reply.json.data[0].embedding)).toBe(true);
      (reply.json.data[0].embedding as number[]).forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 5));
    }
  });
});

describe('usage estimated when an upstream reports none', () => {
  it('charges CJK text and emoji by their UTF-8 bytes, not their characters (Gemini embeddings)', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const sdk = client(stack, key.key);
    // 100 CJK characters were charged 25 tokens (cl100k makes 93 of them), 50 emoji 25 (cl100k: 140).
    const cjk = await sdk.embeddings.create({ model, input: '漢'.repeat(100), encoding_format: 'float' });
    expect(cjk.usage).toEqual({ prompt_tokens: 225, total_tokens: 225 });
    const emoji = await sdk.embeddings.create({ model, input: ['😀'.repeat(25), '🚀'.repeat(25)], encoding_format: 'float' });
    expect(emoji.usage).toEqual({ prompt_tokens: 150, total_tokens: 150 });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(375);
  });
});

describe('a conversation as large as the body limit allows', () => {
  const parts = (count: number) => Array.from({ length: count }, (_, i) => ({ type: 'text', text: `p${i}` }));

  it('is answered from an anthropic channel however many content parts it has, and does not count against the channel', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.anthropic({ text: 'many parts read' });
    const model = uniqueModel();
    const made = await channel(mock, [model]);
    const { key } = await apiKey();
    // Two user turns joined into one (150,000 parts pushed onto it), and a system of 150,000 parts.
    for (const messages of [
      [{ role: 'user', content: 'first' }, { role: 'user', content: parts(150_000) }],
      [{ role: 'system', content: parts(150_000) }, { role: 'user', content: 'hi' }],
    ]) {
      const reply = await postJson(`${stack.gateway.url}/v1/chat/completions`, { model, messages }, { authorization: `Bearer ${key}` });
      expect(reply.status, reply.text.slice(0, 200)).toBe(200);
      expect(reply.json.choices[0].message.content).toBe('many parts read');
    }
    expect((mock.requests[0]!.body as { messages: { content: unknown[] }[] }).messages[0]!.content).toHaveLength(150_001);
    expect((mock.requests[1]!.body as { system: unknown[] }).system).toHaveLength(150_000);
    const row = (await stack.adminData('GET', `/api/channel/${made.id}`)) as { status: number };
    expect(row.status).toBe(1);
  }, 300_000);
});

describe('a reply refused for its size', () => {
  it('is charged its prompt, which the upstream read and bills, and the request log says so', async ({ stack, upstream, channel, apiKey }) => {
    // Each reply past UPSTREAM_MAX_REPLY_BYTES (1 MiB here), or a first streamed event past UPSTREAM_MAX_EVENT_BYTES.
    const mock = await upstream.openai({ embeddingPadBytes: 1_100_000, text: 'x'.repeat(1_100_000) });
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const post = (path: string, body: unknown, requestId: string) =>
      postJson(`${stack.gateway.url}/v1${path}`, body, { authorization: `Bearer ${key.key}`, 'x-request-id': requestId });
    let charged = 0;
    for (const [path, body] of [
      ['/embeddings', { model, input: 'abcdefghijklmnop', encoding_format: 'float' }],
      ['/chat/completions', { model, messages: [{ role: 'user', content: 'write a lot' }] }],
      ['/completions', { model, prompt: 'complete a lot', max_tokens: 100 }],
      // Its first event (the one word) is past the limit: refused before anything reached the client.
      ['/completions', { model, prompt: 'stream a lot', max_tokens: 100, stream: true }],
    ] as [string, Record<string, unknown>][]) {
      const requestId = `refused-${++seq}`;
      const reply = await post(path, body, requestId);
      expect(reply.status, `${path} ${reply.text.slice(0, 200)}`).toBe(502);
      expect(reply.text).toMatch(/larger than 1048576 bytes/);
      const row = await loggedRow(stack, requestId);
      expect(row, path).toMatchObject({ status: 502, completion_tokens: 0 });
      expect(row.prompt_tokens, path).toBeGreaterThan(0);
      expect(row.total_tokens).toBe(row.prompt_tokens);
      charged += row.total_tokens;
      // 16 ASCII characters: 4 tokens.
      if (path === '/embeddings') expect(row.prompt_tokens).toBe(4);
    }
    await expect.poll(() => usedQuota(stack, key.id)).toBe(charged);
  });

  it("is charged its prompt on Gemini's own route too, whole and streamed", async ({ stack, upstream, channel, apiKey }) => {
    // 1 MB of PCM is 1.33 MB of base64: past the 1 MiB limits, whole or as the stream's first event.
    const mock = await upstream.gemini({ pcmBytes: 1_000_000, streamChunkMs: 60_000 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const body = { contents: [{ parts: [{ text: 'say this at length' }] }], generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } } };
    let charged = 0;
    for (const method of ['generateContent', 'streamGenerateContent?alt=sse']) {
      const requestId = `refused-${++seq}`;
      const reply = await postJson(`${stack.gateway.url}/v1beta/models/${model}:${method}`, body, { 'x-goog-api-key': key.key, 'x-request-id': requestId });
      expect(reply.status, `${method} ${reply.text.slice(0, 200)}`).toBe(502);
      const row = await loggedRow(stack, requestId);
      // 18 ASCII characters: 5 tokens.
      expect(row, method).toMatchObject({ status: 502, prompt_tokens: 5, total_tokens: 5 });
      charged += row.total_tokens;
    }
    await expect.poll(() => usedQuota(stack, key.id)).toBe(charged);
  });
});

/** 40 characters: 2 s of speech at the mocks' 50 ms a character. */
const SPEECH_TEXT = 'The quick brown fox jumps over the dog!!';

const speak = (stack: Stack, key: string, body: Record<string, unknown>) => fetch(`${stack.gateway.url}/v1/audio/speech`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ input: SPEECH_TEXT, voice: 'alloy', ...body }),
});

describe('speech labelled with what it is', () => {
  it('answers with the Content-Type an openai upstream sent, not the format asked, when they differ', async ({ stack, upstream, channel, apiKey }) => {
    const ignoring = await upstream.openai({ speechFormat: 'mp3' });
    const model = uniqueModel();
    await channel(ignoring, [model]);
    const { key } = await apiKey();
    for (const format of ['opus', 'flac']) {
      const response = await client(stack, key).audio.speech.create({ model, input: SPEECH_TEXT, voice: 'alloy', response_format: format as 'opus' | 'flac' });
      expect(response.headers.get('content-type'), format).toBe('audio/mpeg');
      const audio = Buffer.from(await response.arrayBuffer());
      // MP3, as labelled: an ID3 tag or a frame's sync bits first.
      expect(audio.toString('latin1', 0, 3) === 'ID3' || (audio[0] === 0xff && (audio[1]! & 0xe0) === 0xe0)).toBe(true);
    }
  });

  it("passes an upstream's own label with its parameters, and names the format asked for when the upstream's label is unusable", async ({ stack, upstream, channel, apiKey }) => {
    const labelled = await upstream.openai({ speechContentType: 'audio/ogg; codecs=opus' });
    const garbled = await upstream.openai({ speechContentType: 'not a media type' });
    const model = uniqueModel();
    await channel(labelled, [model]);
    await channel(garbled, [`${model}-garbled`]);
    const { key } = await apiKey();
    const first = await speak(stack, key, { model, response_format: 'opus' });
    expect(first.headers.get('content-type')).toBe('audio/ogg; codecs=opus');
    expect(Buffer.from(await first.arrayBuffer()).toString('latin1', 0, 4)).toBe('OggS');
    const second = await speak(stack, key, { model: `${model}-garbled`, response_format: 'flac' });
    expect(second.headers.get('content-type')).toBe('audio/flac');
    expect(Buffer.from(await second.arrayBuffer()).toString('latin1', 0, 4)).toBe('fLaC');
  });
});

/** The RIFF size and the data chunk's size of a WAV, and where its data begins. */
function wavSizes(wav: Buffer): { riff: number; data: number; dataAt: number } {
  let at = 12;
  while (wav.toString('latin1', at, at + 4) !== 'data') at += 8 + wav.readUInt32LE(at + 4);
  return { riff: wav.readUInt32LE(4), data: wav.readUInt32LE(at + 4), dataAt: at + 8 };
}

describe('a WAV read whole', () => {
  it('carries its real RIFF and data sizes, passed through from openai or encoded from gemini', async ({ stack, upstream, channel, apiKey }) => {
    const openai = await upstream.openai();
    const gemini = await upstream.gemini();
    const model = uniqueModel();
    await channel(openai, [model]);
    await channel(gemini, [`${model}-gemini`]);
    const { key } = await apiKey();
    // Speed 2 from gemini is encoded by FFmpeg; speed 1 is the PCM behind a header.
    for (const body of [{ model }, { model: `${model}-gemini` }, { model: `${model}-gemini`, speed: 2 }]) {
      const response = await client(stack, key).audio.speech.create({ input: SPEECH_TEXT, voice: 'alloy', response_format: 'wav', ...body });
      expect(response.headers.get('content-type')).toBe('audio/wav');
      const wav = Buffer.from(await response.arrayBuffer());
      const sizes = wavSizes(wav);
      expect(sizes.riff, JSON.stringify(body)).toBe(wav.length - 8);
      expect(sizes.data, JSON.stringify(body)).toBe(wav.length - sizes.dataAt);
      // 2 s of 24 kHz 16-bit mono (1 s at speed 2).
      expect(Math.abs(sizes.data / 48_000 - ('speed' in body ? 1 : 2))).toBeLessThan(0.15);
    }
  });

  it('keeps the unknown-size marker when streamed as speech events', async ({ stack, upstream, channel, apiKey }) => {
    const openai = await upstream.openai();
    const model = uniqueModel();
    await channel(openai, [model]);
    const { key } = await apiKey();
    const response = await speak(stack, key, { model, response_format: 'wav', stream_format: 'sse' });
    const events = (await response.text()).split('\n\n').filter((block) => block.startsWith('data: ')).map((block) => JSON.parse(block.slice(6)));
    const wav = Buffer.concat(events.filter((e) => e.type === 'speech.audio.delta').map((e) => Buffer.from(e.audio, 'base64')));
    expect(wav.toString('latin1', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(0xffffffff);
  });
});
