import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/contracts';
import { jsonlLines } from './jsonl-lines.ts';

const limits = { maxBytes: 1 << 20, maxLines: 100 };

/** The file cut into chunks of `size` bytes, as a form's file part may arrive. */
const chunked = (text: string, size: number) => {
  const bytes = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
  return Readable.from(chunks);
};

async function linesOf(stream: Readable, options = limits) {
  const lines = [];
  for await (const line of jsonlLines(stream, options)) lines.push(line);
  return lines;
}

const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as GatewayError);

describe('jsonlLines', () => {
  it('splits lines however the bytes are cut, multi-byte characters and long lines included', async () => {
    const long = JSON.stringify({ text: 'ü€😀'.repeat(5000) });
    const text = `{"a":1}\r\n\n  \n${long}\n{"b":"é"}`;
    for (const size of [1, 2, 3, 7, 64, 1 << 16]) {
      expect(await linesOf(chunked(text, size))).toEqual([
        { line: 1, content: '{"a":1}' },
        { line: 4, content: long },
        { line: 5, content: '{"b":"é"}' },
      ]);
    }
  });

  it('names the first line that is not a JSON object, or not UTF-8', async () => {
    for (const [text, message] of [['{}\n[1]\n', 'line 2 of the file is not a JSON object'], ['{}\n\n{"a":\n', 'line 3 of the file is not valid JSON'], ['{}\nnull', 'line 2 of the file is not a JSON object']]) {
      const error = await refusal(linesOf(chunked(text!, 3)));
      expect(error).toMatchObject({ status: 400, param: 'file', message });
    }
    const error = await refusal(linesOf(Readable.from([Buffer.from('{}\n{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n')])));
    expect(error).toMatchObject({ status: 400, message: 'line 2 of the file is not UTF-8 text' });
  });

  it('refuses past maxLines (blank lines counted) and past maxBytes', async () => {
    const tiny = { maxBytes: 20, maxLines: 2 };
    expect(await linesOf(chunked('{}\n{}\n', 1), tiny)).toHaveLength(2);
    expect(await linesOf(chunked('{}\n\n', 1), tiny)).toHaveLength(1);
    expect(await linesOf(chunked('\n{}', 1), tiny)).toEqual([{ line: 2, content: '{}' }]);
    // One line and blank lines past the limit: the blank lines are lines of the file (200 million
    // of them, uncounted, held the gateway's event loop for the whole upload).
    for (const blank of ['\n', '\r\n', '  \n']) {
      expect(await refusal(linesOf(chunked(`{}\n${blank.repeat(2)}`, 3), tiny)), JSON.stringify(blank)).toMatchObject({ status: 400, message: expect.stringContaining('more than 2 lines, blank lines included') });
    }
    expect(await refusal(linesOf(chunked('{}\n{}\n{}\n', 4), tiny))).toMatchObject({ status: 400, message: expect.stringContaining('more than 2 lines') });
    expect(await linesOf(chunked(`{"a":"${'x'.repeat(12)}"}`, 5), tiny)).toHaveLength(1);
    expect(await refusal(linesOf(chunked(`{"a":"${'x'.repeat(13)}"}`, 5), tiny))).toMatchObject({ status: 413, code: 'payload_too_large' });
  });

  it('refuses a line past maxLineBytes, counted in bytes, as soon as a line that never ends passes it', async () => {
    const limit = { maxBytes: 1 << 20, maxLines: 100, maxLineBytes: 30 };
    const at = `{"a":"${'x'.repeat(22)}"}`;
    expect(Buffer.byteLength(at)).toBe(30);
    expect(await linesOf(chunked(`{}\n${at}\n`, 7), limit)).toHaveLength(2);
    expect(await refusal(linesOf(chunked(`{}\n{"a":"${'x'.repeat(23)}"}\n`, 7), limit))).toMatchObject({ status: 413, message: expect.stringContaining('line 2 of the file is larger than 30 bytes') });
    // 16 characters, 32 bytes.
    expect(await refusal(linesOf(chunked(`{"a":"${'€'.repeat(8)}"}`, 4), limit))).toMatchObject({ status: 413, message: expect.stringContaining('line 1 ') });
    // A line that never ends is refused once 30 characters of it have come, not held to the file's end.
    let read = 0;
    const endless = Readable.from((function* () { for (let i = 0; i < 1000; i++) { read++; yield Buffer.from('y'.repeat(10)); } })());
    expect(await refusal(linesOf(endless, limit))).toMatchObject({ status: 413, message: expect.stringContaining('line 1 ') });
    expect(read).toBeLessThan(10);
  });

  it('keeps a CRLF line of exactly maxLineBytes whose \\r ends a chunk and whose \\n starts the next', async () => {
    const limit = { maxBytes: 1 << 20, maxLines: 100, maxLineBytes: 30 };
    const at = `{"a":"${'x'.repeat(22)}"}`;
    // "{}\r\n" is 4 bytes and the line 30, so its \r is byte 35: the last of the fifth 7-byte chunk.
    for (const size of [7, 31, 35]) {
      expect(await linesOf(chunked(`{}\r\n${at}\r\n{}\r\n`, size), limit), `chunks of ${size}`).toHaveLength(3);
    }
    expect(await refusal(linesOf(chunked(`{}\r\n{"a":"${'x'.repeat(23)}"}\r\n`, 7), limit))).toMatchObject({ status: 413, message: expect.stringContaining('line 2 ') });
  });
});
