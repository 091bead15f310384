import { QueueName, type AudioJobPayload } from '@gateway/contracts';
import { runModelWorker } from '@gateway/worker-runtime';
import { audioJobHandler } from './processor.ts';

await runModelWorker<AudioJobPayload>({
  service: 'audio-worker',
  queue: QueueName.audio,
  concurrency: (config) => config.AUDIO_CONCURRENCY,
  handler: audioJobHandler,
});
