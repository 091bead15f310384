import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { badRequest } from '@gateway/contracts';

/**
 * The lines of a JSONL upload as its bytes arrive (never the whole file in memory): numbered from
 * 1 as in the file, blank lines skipped, each checked to be one JSON object (a 400 naming the line
 * otherwise), at most `maxLines`.
 */
export async function* jsonlLines(stream: Readable, maxLines: number, onBytes: (bytes: number) => void = () => {}): AsyncGenerator<{ line: number; content: string }> {
  const decoder = new StringDecoder('utf8');
  let carry = '';
  let number = 0;
  let count = 0;
  const check = (text: string) => {
    number++;
    const content = text.endsWith('\r') ? text.slice(0, -1) : text;
    if (content.trim() === '') return undefined;
    if (++count > maxLines) throw badRequest(`the file has more than ${maxLines} lines, the most a batch file may have`, 'file');
    let value: unknown;
    try {
      value = JSON.parse(content);
    } catch {
      throw badRequest(`line ${number} of the file is not valid JSON`, 'file');
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest(`line ${number} of the file is not a JSON object`, 'file');
    return { line: number, content };
  };
  for await (const chunk of stream) {
    onBytes((chunk as Buffer).length);
    const parts = (carry + decoder.write(chunk as Buffer)).split('\n');
    carry = parts.pop()!;
    for (const part of parts) {
      const line = check(part);
      if (line) yield line;
    }
  }
  const last = check(carry + decoder.end());
  if (last) yield last;
}
