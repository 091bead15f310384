/** The three queues the ingress and the workers meet on. */
export const QueueName = {
  completion: 'completion',
  audio: 'audio',
  admin: 'admin',
} as const;
export type QueueName = (typeof QueueName)[keyof typeof QueueName];

/** BullMQ key prefix; one hash tag so every queue key lands in one Redis Cluster slot. */
export const QUEUE_PREFIX = '{gw}';
