/**
 * Turns what the audio endpoint returned into a WAV file you can play:
 *
 *   node scripts/pcm-to-wav.ts reply.json out.wav       # a :generateContent reply
 *   node scripts/pcm-to-wav.ts stream.txt out.wav       # a :streamGenerateContent?alt=sse body
 *   node scripts/pcm-to-wav.ts audio.b64 out.wav        # bare base64 `data`
 *   curl … | node scripts/pcm-to-wav.ts - out.wav       # from stdin
 *
 * Gemini returns raw 16-bit PCM (`audio/L16;codec=pcm;rate=24000`) that players cannot open as
 * it is; a WAV header around it is all they need. The sample rate comes from the mimeType.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { encodeWav, GEMINI_PCM_FORMAT, pcmDurationMs, pcmFormatFromMimeType, type PcmFormat } from '@gateway/contracts';

export interface DecodedAudio {
  pcm: Buffer;
  format: PcmFormat;
}

interface InlineData {
  mimeType?: string;
  data?: string;
}

/** The audio in a reply, an array or SSE text of stream events, or bare base64. */
export function audioFromReply(text: string): DecodedAudio {
  const trimmed = text.trim();
  let replies: unknown[];
  if (trimmed.startsWith('data:')) {
    replies = trimmed
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => JSON.parse(line.slice(5)) as unknown);
  } else if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const parsed = JSON.parse(trimmed) as unknown;
    replies = Array.isArray(parsed) ? parsed : [parsed];
  } else {
    if (!/^[A-Za-z0-9+/=\s_-]*$/.test(trimmed)) throw new Error('input is neither a JSON reply, SSE events nor base64');
    return { pcm: Buffer.from(trimmed.replace(/\s+/g, ''), 'base64'), format: { ...GEMINI_PCM_FORMAT } };
  }

  const audio: InlineData[] = [];
  for (const reply of replies) {
    const error = (reply as { error?: { message?: string; status?: string } }).error;
    if (error) throw new Error(`the reply is an error: ${error.status ?? ''} ${error.message ?? ''}`.trim());
    const parts = (reply as { candidates?: { content?: { parts?: { inlineData?: InlineData }[] } }[] }).candidates?.[0]?.content?.parts ?? [];
    for (const part of parts) if (part.inlineData?.data !== undefined) audio.push(part.inlineData);
  }
  if (audio.length === 0) throw new Error('the reply holds no inlineData audio');
  return {
    pcm: Buffer.concat(audio.map((a) => Buffer.from(a.data!, 'base64'))),
    format: pcmFormatFromMimeType(audio[0]!.mimeType),
  };
}

function main(args: string[]): number {
  const [input, output] = args;
  if (!input || !output) {
    process.stderr.write('usage: node scripts/pcm-to-wav.ts <reply.json | stream.txt | base64 file | -> <out.wav>\n');
    return 2;
  }
  const text = readFileSync(input === '-' ? 0 : input, 'utf8');
  const { pcm, format } = audioFromReply(text);
  writeFileSync(output, encodeWav(pcm, format));
  const seconds = (pcmDurationMs(pcm.length, format) / 1000).toFixed(2);
  const channels = format.channels === 1 ? 'mono' : `${format.channels} channels`;
  process.stderr.write(`wrote ${output}: ${seconds} s, ${format.sampleRate} Hz, ${format.bitsPerSample}-bit ${channels}\n`);
  return 0;
}

if (import.meta.main) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`pcm-to-wav: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}
