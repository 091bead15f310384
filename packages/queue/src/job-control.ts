/**
 * What an ingress tells the workers about a job it waits for, on CANCEL_CHANNEL, as one
 * discriminated union: nobody waits for it any more (cancel), it is not wanted unless it has
 * begun (withdraw: a cancelled batch's line still waiting for its channel), its stream's client is behind
 * (pause, renewed while it lasts) or has caught up (resume), or its client has taken the stream
 * up to so many characters (credit: the worker may send `chars` plus the job's window). On the
 * wire: the bare job id for a cancel, `withdraw:<id>`, `pause:<id>`, `resume:<id>` and `credit:<chars>:<id>`, so
 * processes of two versions understand each other during a rolling upgrade (a worker of before
 * takes a credit for the cancel of a job it does not know, and forgets it).
 */
import { CANCEL_CHANNEL } from './reply-keys.ts';
import type { Redis } from './redis-connection.ts';

export type JobControl =
  | { kind: 'cancel' | 'withdraw' | 'pause' | 'resume'; jobId: string }
  | { kind: 'credit'; jobId: string; chars: number };

export function encodeJobControl(control: JobControl): string {
  if (control.kind === 'credit') return `credit:${control.chars}:${control.jobId}`;
  return control.kind === 'cancel' ? control.jobId : `${control.kind}:${control.jobId}`;
}

export function decodeJobControl(message: string): JobControl {
  for (const kind of ['withdraw', 'pause', 'resume'] as const) {
    if (message.startsWith(`${kind}:`)) return { kind, jobId: message.slice(kind.length + 1) };
  }
  const credit = /^credit:(\d+):(.+)$/s.exec(message);
  if (credit) return { kind: 'credit', chars: Number(credit[1]), jobId: credit[2]! };
  return { kind: 'cancel', jobId: message };
}

/** Sends a job control to every worker; a lost one is made good by its renewal, the pause's lapse or the job's deadline. */
export function publishJobControl(redis: Redis, control: JobControl): void {
  redis.publish(CANCEL_CHANNEL, encodeJobControl(control)).catch(() => {});
}
