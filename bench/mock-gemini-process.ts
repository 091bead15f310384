/**
 * The mock Gemini TTS upstream as a process of its own, so a benchmark's client, gateway,
 * workers and upstream do not share one event loop. Behaviour as JSON in argv[2]; sends
 * `{type: 'ready', url}` over IPC, then answers `{cmd: 'stats' | 'reset' | 'set', behaviour?}`
 * with the mock's stats.
 *   fork('bench/mock-gemini-process.ts', ['{"delayMs":500}'])
 */
import { startMockGeminiUpstream, type MockGeminiBehaviour } from '@gateway/testkit';

const mock = await startMockGeminiUpstream(JSON.parse(process.argv[2] ?? '{}') as Partial<MockGeminiBehaviour>);
process.send!({ type: 'ready', url: mock.url, apiKey: mock.apiKey });
process.on('message', (message: { id: number; cmd: 'stats' | 'reset' | 'set'; behaviour?: Partial<MockGeminiBehaviour> }) => {
  if (message.cmd === 'reset') mock.reset();
  if (message.cmd === 'set') mock.set(message.behaviour ?? {});
  process.send!({ type: 'reply', id: message.id, stats: { ...mock.stats } });
});
process.on('disconnect', () => void mock.close().then(() => process.exit(0)));
