/**
 * The mock OpenAI upstream as a process of its own, so the load generator and the gateway do
 * not share its event loop. Controlled over IPC by bench/run.ts.
 */
import { startMockOpenAIUpstream } from '@gateway/testkit';

const mock = await startMockOpenAIUpstream({ delayMs: Number(process.env.MOCK_DELAY_MS ?? 0) });
process.send!({ type: 'ready', url: mock.url });
process.on('message', (message: { id: number; cmd: string; limit?: number; retryAfter?: number; behaviour?: object }) => {
  switch (message.cmd) {
    case 'limit':
      mock.limitConcurrency(message.limit ?? 0, message.retryAfter);
      break;
    case 'behaviour':
      mock.setBehaviour(message.behaviour ?? {});
      break;
    case 'reset':
      mock.reset();
      break;
  }
  process.send!({
    type: 'reply', id: message.id,
    stats: { requests: mock.requests.length, inFlight: mock.inFlight, maxInFlight: mock.maxInFlight, overLimit: mock.overLimit, aborted: mock.aborted, meanInFlight: mock.meanInFlight },
  });
});
