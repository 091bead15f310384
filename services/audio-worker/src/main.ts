import { QueueName, type AudioJobPayload } from '@gateway/contracts';
import { runModelWorker } from '@gateway/model-worker';
import { audioJobHandler } from './processor.ts';

await runModelWorker<AudioJobPayload>({
  service: 'audio-worker',
  queue: QueueName.audio,
  concurrency: (config) => config.AUDIO_CONCURRENCY,
  handler: audioJobHandler,
});
