/**
 * Why a job was ended before its handler finished, as the abort reason of its signal: the
 * request log tells a client that left (499) from a cut the gateway or the worker made itself
 * (503, 504), so an operator can tell them apart.
 */

/** A cut its ingress made, not its client: the gateway stopping past its deadline, or its reply deadline passing. */
export type IngressCut = 'stopping' | 'deadline';

/** The abort reason of a job its ingress gave up on for `why`, its client still there. */
export class CutByIngress extends Error {
  readonly why: IngressCut;
  constructor(why: IngressCut) {
    super(why === 'stopping' ? 'the gateway stopped before this answer was complete' : 'the request did not complete within its deadline');
    this.why = why;
  }
}

/** The abort reason of a job whose own deadline passed while it ran or waited. */
export class DeadlinePassed extends Error {
  constructor() {
    super('deadline passed');
  }
}

/** The abort reason of a job its worker's shutdown ended. */
export class WorkerStopping extends Error {}

/**
 * The abort reason an ingress gives a request's signal when its own shutdown, not its client,
 * ends the request (`RequestOptions.signal`): its job is cancelled as `stopping`.
 */
export const INGRESS_STOPPING = Symbol('the gateway stopped');
