import { badRequest, type QueueName } from '@gateway/contracts';
import type { BacklogAdmission } from './backlog-admission.ts';
import type { KeyRateLimit } from './key-rate-limit.ts';

/** What admission needs to know of the caller (from its API key). */
export interface AdmissionSubject {
  tokenId: number;
  rpmLimit: number;
  priority: 'interactive' | 'batch';
}

/** BullMQ serves jobs without a priority before prioritized ones: batch waits for interactive. */
const BATCH_PRIORITY = 10;

/**
 * Everything decided before a model request is enqueued: its priority (`X-Priority: batch`
 * or the key's default), the key's requests-per-minute limit (429), and whether the queue can
 * still serve it within the time-out (503).
 */
export class ModelAdmission {
  private readonly rateLimit: KeyRateLimit;
  private readonly backlog: BacklogAdmission;

  constructor(rateLimit: KeyRateLimit, backlog: BacklogAdmission) {
    this.rateLimit = rateLimit;
    this.backlog = backlog;
  }

  /** Admits the request or throws; resolves with the BullMQ priority to enqueue it with. */
  async admit(headers: Record<string, string | string[] | undefined>, subject: AdmissionSubject, queue: QueueName): Promise<number | undefined> {
    const priority = priorityOf(headers['x-priority'], subject.priority);
    this.backlog.admit(queue);
    await this.rateLimit.check(subject.tokenId, subject.rpmLimit);
    return priority === 'batch' ? BATCH_PRIORITY : undefined;
  }
}

function priorityOf(header: string | string[] | undefined, fallback: 'interactive' | 'batch'): 'interactive' | 'batch' {
  const value = (Array.isArray(header) ? header[0] : header)?.trim().toLowerCase();
  if (!value) return fallback;
  if (value === 'batch' || value === 'interactive') return value;
  throw badRequest('X-Priority must be "interactive" or "batch"', 'X-Priority');
}
