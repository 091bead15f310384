import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sinePcm } from '@gateway/testkit';
import { audioFromReply } from './pcm-to-wav.ts';

const run = promisify(execFile);
const script = new URL('./pcm-to-wav.ts', import.meta.url).pathname;
const pcm = sinePcm(4800); // 100 ms at 24 kHz
const reply = (data: Buffer, mimeType = 'audio/L16;codec=pcm;rate=24000') => ({
  candidates: [{ content: { role: 'model', parts: [{ inlineData: { mimeType, data: data.toString('base64') } }] }, finishReason: 'STOP' }],
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pcm-to-wav-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('audioFromReply', () => {
  it('reads a reply, stream events (SSE or array) and bare base64', () => {
    const halves = [pcm.subarray(0, 2400), pcm.subarray(2400)];
    expect(audioFromReply(JSON.stringify(reply(pcm))).pcm.equals(pcm)).toBe(true);
    const sse = halves.map((h) => `data: ${JSON.stringify(reply(h))}\r\n\r\n`).join('');
    expect(audioFromReply(sse).pcm.equals(pcm)).toBe(true);
    expect(audioFromReply(JSON.stringify(halves.map((h) => reply(h)))).pcm.equals(pcm)).toBe(true);
    expect(audioFromReply(`${pcm.toString('base64')}\n`).pcm.equals(pcm)).toBe(true);
  });

  it('takes the rate from the mimeType', () => {
    expect(audioFromReply(JSON.stringify(reply(pcm, 'audio/L16;codec=pcm;rate=16000'))).format.sampleRate).toBe(16_000);
  });

  it('explains an error body or a reply without audio', () => {
    expect(() => audioFromReply('{"error":{"code":400,"message":"bad voice","status":"INVALID_ARGUMENT"}}')).toThrow('bad voice');
    expect(() => audioFromReply('{"candidates":[]}')).toThrow('no inlineData');
  });
});

describe('node scripts/pcm-to-wav.ts', () => {
  it('writes a playable WAV file from a saved reply', async () => {
    const input = join(dir, 'reply.json');
    const output = join(dir, 'out.wav');
    await writeFile(input, JSON.stringify(reply(pcm)));
    const { stderr } = await run(process.execPath, [script, input, output]);
    expect(stderr).toContain('0.10 s, 24000 Hz, 16-bit mono');
    const wav = await readFile(output);
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.toString('ascii', 8, 12)).toBe('WAVE');
    expect(wav.readUInt32LE(24)).toBe(24_000);
    expect(wav.readUInt32LE(40)).toBe(pcm.length);
    expect(wav.subarray(44).equals(pcm)).toBe(true);
  });

  it('fails with a usage line when arguments are missing', async () => {
    await expect(run(process.execPath, [script])).rejects.toMatchObject({ code: 2 });
  });
});
