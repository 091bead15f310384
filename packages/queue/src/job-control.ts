/**
 * What an ingress tells the workers about a job it waits for, on CANCEL_CHANNEL, as one
 * discriminated union: nobody waits for it any more (cancel), or its stream's client is behind
 * (pause, renewed while it lasts) or has caught up (resume). On the wire: the bare job id for a
 * cancel, `pause:<id>` and `resume:<id>`, as before, so processes of two versions understand
 * each other during a rolling upgrade.
 */
import { CANCEL_CHANNEL } from './reply-keys.ts';
import type { Redis } from './redis-connection.ts';

export type JobControl = { kind: 'cancel' | 'pause' | 'resume'; jobId: string };

export function encodeJobControl(control: JobControl): string {
  return control.kind === 'cancel' ? control.jobId : `${control.kind}:${control.jobId}`;
}

export function decodeJobControl(message: string): JobControl {
  for (const kind of ['pause', 'resume'] as const) {
    if (message.startsWith(`${kind}:`)) return { kind, jobId: message.slice(kind.length + 1) };
  }
  return { kind: 'cancel', jobId: message };
}

/** Sends a job control to every worker; a lost one is made good by the pause's lapse or the job's deadline. */
export function publishJobControl(redis: Redis, control: JobControl): void {
  redis.publish(CANCEL_CHANNEL, encodeJobControl(control)).catch(() => {});
}
