import { QueueName, type CompletionJobPayload } from '@gateway/contracts';
import { runModelWorker } from '@gateway/worker-runtime';
import { completionJobHandler } from './processor.ts';

await runModelWorker<CompletionJobPayload>({
  service: 'completion-worker',
  queue: QueueName.completion,
  concurrency: (config) => config.COMPLETION_CONCURRENCY,
  handler: completionJobHandler,
});
