/**
 * Encodes speech as it comes: raw PCM (24 kHz, 16-bit, mono, as Gemini's speech models give
 * it) into the format a client asked for, a piece at a time, so audio reaches the client while
 * the upstream still speaks.
 *
 * Encoding is CPU work, so it never runs on the worker's event loop: each encode is an FFmpeg
 * process (the static build of `@ffmpeg-installer/ffmpeg`: libmp3lame, libopus, FFmpeg's own AAC
 * and FLAC encoders), fed through its stdin and read from its stdout, with backpressure both
 * ways. A process, not a worker thread: the encoders are native and crash-isolated, and the
 * operating system spreads them over every core. PCM and WAV at normal speed need no encoding
 * and are passed through (WAV behind a streaming header).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import ffmpeg from '@ffmpeg-installer/ffmpeg';
import { GEMINI_PCM_FORMAT, type SpeechFormat } from '@gateway/contracts';

/** The FFmpeg binary this package runs. */
export const ffmpegPath: string = ffmpeg.path;

/** FFmpeg's muxer and encoder for each format; opus in Ogg and AAC in ADTS, as OpenAI answers them. */
const codecs: Record<SpeechFormat, string[]> = {
  mp3: ['-f', 'mp3', '-c:a', 'libmp3lame', '-b:a', '64k'],
  opus: ['-f', 'ogg', '-c:a', 'libopus', '-b:a', '32k'],
  aac: ['-f', 'adts', '-c:a', 'aac', '-b:a', '64k'],
  flac: ['-f', 'flac', '-c:a', 'flac'],
  wav: ['-f', 'wav', '-c:a', 'pcm_s16le'],
  pcm: ['-f', 's16le', '-c:a', 'pcm_s16le'],
};

/**
 * FFmpeg's `atempo` takes 0.5 to 2.0: a speed outside is a chain of filters (0.25 = 0.5 × 0.5).
 * Tempo, not pitch: the voice speaks faster, not higher.
 */
export function tempoFilter(speed: number): string | undefined {
  if (speed === 1) return undefined;
  const steps: string[] = [];
  let left = speed;
  while (left > 2) {
    steps.push('atempo=2');
    left /= 2;
  }
  while (left < 0.5) {
    steps.push('atempo=0.5');
    left /= 0.5;
  }
  steps.push(`atempo=${left.toFixed(6)}`);
  return steps.join(',');
}

/** A WAV header for a stream whose length is not known yet: sizes at their largest, as OpenAI's streamed WAV. */
export function streamingWavHeader(): Buffer {
  const { sampleRate, channels, bitsPerSample } = GEMINI_PCM_FORMAT;
  const blockAlign = channels * (bitsPerSample / 8);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(0xffffffff, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * blockAlign, 28);
  header.writeUInt16LE(blockAlign, 32);
  header.writeUInt16LE(bitsPerSample, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(0xffffffff, 40);
  return header;
}

export interface EncodeOptions {
  format: SpeechFormat;
  /** 0.25 to 4; 1 unless set. */
  speed?: number;
  /** Stops the encode (and its process) when the request is given up. */
  signal?: AbortSignal;
  /** The FFmpeg to run: the one the package ships unless set. */
  ffmpeg?: string;
}

/**
 * The encoded audio of `pcm`, yielded as FFmpeg writes it. Throws when FFmpeg fails, with what
 * it said; its process is killed when the caller stops reading or the signal aborts.
 */
export async function* encodeSpeech(pcm: AsyncIterable<Buffer>, options: EncodeOptions): AsyncGenerator<Buffer> {
  const speed = options.speed ?? 1;
  if (speed === 1 && (options.format === 'pcm' || options.format === 'wav')) {
    if (options.format === 'wav') yield streamingWavHeader();
    yield* pcm;
    return;
  }
  const { sampleRate, channels } = GEMINI_PCM_FORMAT;
  const filter = tempoFilter(speed);
  const args = [
    '-hide_banner', '-loglevel', 'error', '-nostdin',
    // Raw PCM needs no probing: without these FFmpeg reads seconds of input before it encodes any.
    '-probesize', '32', '-analyzeduration', '0', '-fflags', 'nobuffer',
    '-f', 's16le', '-ar', String(sampleRate), '-ac', String(channels), '-i', 'pipe:0',
    ...(filter ? ['-filter:a', filter] : []),
    ...codecs[options.format],
    '-flush_packets', '1',
    'pipe:1',
  ];
  const { child, exited } = await startFfmpeg(options.ffmpeg ?? ffmpegPath, args, `encode ${options.format}`);
  let said = '';
  child.stderr.on('data', (data: Buffer) => {
    if (said.length < 2000) said += data.toString('utf8');
  });
  const kill = () => child.kill('SIGKILL');
  options.signal?.addEventListener('abort', kill, { once: true });
  // The PCM is written as FFmpeg takes it; a failure to write ends in FFmpeg's own error.
  const feeding = feed(pcm, child.stdin).catch((error: unknown) => {
    kill();
    throw error;
  });
  feeding.catch(() => {});
  try {
    for await (const chunk of child.stdout) yield chunk as Buffer;
    await feeding;
    const code = await exited;
    if (code !== 0 && !options.signal?.aborted) throw new Error(`FFmpeg could not encode ${options.format}: exit ${code}${said ? `: ${said.trim()}` : ''}`);
  } finally {
    options.signal?.removeEventListener('abort', kill);
    if (child.exitCode === null) kill();
  }
}

async function feed(pcm: AsyncIterable<Buffer>, stdin: Writable): Promise<void> {
  stdin.on('error', () => {}); // FFmpeg gone: reported by its exit
  for await (const chunk of pcm) {
    if (stdin.destroyed) return;
    if (!stdin.write(chunk)) await new Promise<void>((resolve) => { stdin.once('drain', resolve); stdin.once('close', resolve); });
  }
  stdin.end();
}

/**
 * FFmpeg started with pipes on every side, and its exit code once it closes. One that cannot be
 * started (missing, or no process or file left under load) throws "could not be started to
 * `what`": the caller's error, never an 'error' thrown at the process. Out of files (EMFILE),
 * Node gives the child no pipes at all before it says why; otherwise the failure is thrown when
 * `exited` settles.
 */
async function startFfmpeg(path: string, args: string[], what: string): Promise<{ child: ChildProcessByStdio<Writable, Readable, Readable>; exited: Promise<number | null> }> {
  const child: ChildProcessByStdio<Writable, Readable, Readable> = spawn(path, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const failed = new Promise<Error>((resolve) => child.once('error', resolve));
  const cannotStart = (error: Error) => new Error(`FFmpeg could not be started to ${what}: ${error.message}`);
  if (!(child.stdin as Writable | null) || !(child.stdout as Readable | null) || !(child.stderr as Readable | null)) throw cannotStart(await failed);
  const exited = Promise.race([
    new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code))),
    failed.then((error) => { throw cannotStart(error); }),
  ]);
  exited.catch(() => {}); // heard by whoever awaits it
  return { child, exited };
}

/** Decodes audio of any format FFmpeg reads into 24 kHz mono 16-bit PCM (for tests and checks). */
export async function decodeToPcm(audio: Buffer, inputFormat?: string): Promise<Buffer> {
  const { sampleRate, channels } = GEMINI_PCM_FORMAT;
  const input = inputFormat ? ['-f', inputFormat, ...(inputFormat === 's16le' ? ['-ar', String(sampleRate), '-ac', '1'] : [])] : [];
  const { child, exited } = await startFfmpeg(ffmpegPath, ['-hide_banner', '-loglevel', 'error', ...input, '-i', 'pipe:0', '-f', 's16le', '-ar', String(sampleRate), '-ac', String(channels), 'pipe:1'], 'decode');
  const out: Buffer[] = [];
  let said = '';
  child.stdout.on('data', (d: Buffer) => out.push(d));
  child.stderr.on('data', (d: Buffer) => (said += d.toString('utf8')));
  child.stdin.on('error', () => {});
  child.stdin.end(audio);
  const code = await exited;
  if (code !== 0) throw new Error(`FFmpeg could not decode: ${said.trim()}`);
  return Buffer.concat(out);
}
