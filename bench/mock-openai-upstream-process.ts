/**
 * The mock OpenAI upstream as a process of its own, so a benchmark's load generator, gateway,
 * workers and upstream do not share one event loop. Prints `{"url": …}` once listening.
 *   node bench/mock-openai-upstream-process.ts ['{"delayMs":0}']
 */
import { startMockOpenAIUpstream, type MockOpenAIBehaviour } from '../packages/testkit/src/mock-openai-upstream.ts';

const behaviour = JSON.parse(process.argv[2] ?? '{}') as MockOpenAIBehaviour;
const mock = await startMockOpenAIUpstream(behaviour);
// Keep no history: a benchmark sends hundreds of thousands of requests.
setInterval(() => mock.requests.splice(0), 1000).unref();
process.stdout.write(`${JSON.stringify({ url: mock.url })}\n`);
process.on('SIGTERM', () => void mock.close().then(() => process.exit(0)));
