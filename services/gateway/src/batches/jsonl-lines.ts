import type { Readable } from 'node:stream';
import { badRequest, payloadTooLarge } from '@gateway/contracts';

export interface JsonlLimits {
  /** Most bytes of the file (FILE_MAX_BYTES): past it, a 413. */
  maxBytes: number;
  /** Most lines, blank lines included (FILE_MAX_LINES): past it, a 400. */
  maxLines: number;
  /**
   * Most bytes of one line (BODY_LIMIT_BYTES, what one request may be sent alone): past it, a
   * 413 naming the line, before more of it is held. Unset, only `maxBytes` bounds a line.
   */
  maxLineBytes?: number;
  /** The error past `maxBytes`, given the bytes read; default `fileTooLarge` (a 413). */
  tooLarge?: (bytes: number) => Error;
}

export const fileTooLarge = (maxBytes: number) =>
  payloadTooLarge(`the file is larger than ${maxBytes} bytes, the most a file may be (FILE_MAX_BYTES)`, 'file');

/**
 * The lines of a JSONL upload as its bytes arrive (never the whole file in memory): numbered from
 * 1 as in the file, blank lines skipped (but counted), each checked to be one JSON object (a 400
 * naming the line otherwise), at most `maxLines` of them, `maxLineBytes` each and `maxBytes` in all. `onBytes`
 * counts the bytes read.
 * The bytes must be UTF-8: a stray byte would otherwise be stored as U+FFFD, and the content
 * served back would not be the file sent.
 */
export async function* jsonlLines(stream: Readable, limits: JsonlLimits, onBytes: (bytes: number) => void = () => {}): AsyncGenerator<{ line: number; content: string }> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let bytes = 0;
  let number = 0;
  // The start of a line whose end has not come yet: its pieces, joined once the line ends, so a
  // long line costs its length, not its length times its chunks.
  let pending: string[] = [];
  let pendingChars = 0;
  const maxLineBytes = limits.maxLineBytes ?? Infinity;
  // A line is at least as many bytes as characters, and at most three times as many.
  const lineTooLarge = (line: number) =>
    payloadTooLarge(`line ${line} of the file is larger than ${maxLineBytes} bytes, the most a request may be (BODY_LIMIT_BYTES)`, 'file');
  const check = (text: string) => {
    number++;
    const content = text.endsWith('\r') ? text.slice(0, -1) : text;
    if (content.length * 3 > maxLineBytes && Buffer.byteLength(content) > maxLineBytes) throw lineTooLarge(number);
    // Blank lines count too: uncounted, 200 million of them in one upload cost the event loop
    // each their turn, and other users' requests waited (p99 57 ms → 1.4 s).
    if (number > limits.maxLines) throw badRequest(`the file has more than ${limits.maxLines} lines, blank lines included, the most a batch file may have (FILE_MAX_LINES)`, 'file');
    if (content.trim() === '') return undefined;
    let value: unknown;
    try {
      value = JSON.parse(content);
    } catch {
      throw badRequest(`line ${number} of the file is not valid JSON`, 'file');
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest(`line ${number} of the file is not a JSON object`, 'file');
    return { line: number, content };
  };
  const decode = (chunk?: Buffer) => {
    try {
      return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
    } catch {
      throw badRequest(`line ${number + 1} of the file is not UTF-8 text`, 'file');
    }
  };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    onBytes(chunk.length);
    if (bytes > limits.maxBytes) throw limits.tooLarge?.(bytes) ?? fileTooLarge(limits.maxBytes);
    const text = decode(chunk);
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; start = end + 1, end = text.indexOf('\n', start)) {
      const piece = text.slice(start, end);
      const line = check(pending.length === 0 ? piece : [...pending, piece].join(''));
      pending = [];
      pendingChars = 0;
      if (line) yield line;
    }
    if (start < text.length) {
      pending.push(text.slice(start));
      pendingChars += text.length - start;
      // A \r that ends the chunk may be the first half of a CRLF, which is not the line's.
      if (pendingChars - (text.endsWith('\r') ? 1 : 0) > maxLineBytes) throw lineTooLarge(number + 1);
    }
  }
  pending.push(decode());
  const rest = pending.join('');
  // What follows the file's last newline is a line only if it holds something.
  const last = rest === '' ? undefined : check(rest);
  if (last) yield last;
}
