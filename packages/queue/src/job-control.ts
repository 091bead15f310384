/**
 * What an ingress tells the workers about a job it waits for, on CANCEL_CHANNEL, as one
 * discriminated union: nobody waits for it any more (cancel), it is not wanted unless it has
 * begun (withdraw: a cancelled batch's line still waiting for its channel), its stream's client is behind
 * (pause, renewed while it lasts) or has caught up (resume), or its client has taken the stream
 * up to so many characters (credit: the worker may send `chars` plus the job's window). On the
 * wire: the bare job id for a cancel, `withdraw:<id>`, `pause:<id>`, `resume:<id>` and `credit:<chars>:<id>`, so
 * processes of two versions understand each other during a rolling upgrade (a worker of before
 * takes a credit for the cancel of a job it does not know, and forgets it).
 *
 * A cancel the ingress made itself, its client still there (`why`: its shutdown, its reply
 * deadline), goes as `cancel-<why>:<id>` followed by the bare id: a worker of before takes the
 * first for a job it does not know and stops the job at the second; one of now stops it at the
 * first, and logs it as the ingress's cut, not as the client's leaving.
 */
import { CANCEL_CHANNEL } from './reply-keys.ts';
import type { Redis } from './redis-connection.ts';
import type { IngressCut } from './job-cut-reasons.ts';

export type JobControl =
  | { kind: 'cancel'; jobId: string; why?: IngressCut }
  | { kind: 'withdraw' | 'pause' | 'resume'; jobId: string }
  | { kind: 'credit'; jobId: string; chars: number };

export function encodeJobControl(control: JobControl): string {
  if (control.kind === 'credit') return `credit:${control.chars}:${control.jobId}`;
  if (control.kind === 'cancel') return control.why ? `cancel-${control.why}:${control.jobId}` : control.jobId;
  return `${control.kind}:${control.jobId}`;
}

export function decodeJobControl(message: string): JobControl {
  const cut = /^cancel-(stopping|deadline):(.+)$/s.exec(message);
  if (cut) return { kind: 'cancel', why: cut[1] as IngressCut, jobId: cut[2]! };
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
  if (control.kind === 'cancel' && control.why) redis.publish(CANCEL_CHANNEL, control.jobId).catch(() => {});
}
