/**
 * Node (V8) flags a service runs with; they must be given when the process starts, so whatever
 * starts a service passes them: the test kit and `npm start` from here, and the Dockerfile, the
 * compose file and the `start` scripts of the root and workspace package.json files, which spell
 * them out.
 *
 * The gateway and the batch worker make garbage at a high rate (a burst's waiting requests, a
 * batch's lines, text passed through to slow clients): a 4 MB semi-space keeps the young
 * generation's garbage small, and `--heap-growing-percent=50` lets the old space grow by half of
 * what is live before it is collected instead of up to four times, with no hard cap (which would
 * crash a worker holding large replies). The measurements behind both, and the flags tried and
 * left, are in docs/benchmarks.md ("Why the tuned constants are what they are").
 */
export const serviceNodeFlags: Record<string, readonly string[]> = {
  gateway: ['--max-semi-space-size=4', '--heap-growing-percent=50'],
  'batch-worker': ['--max-semi-space-size=4', '--heap-growing-percent=50'],
};

export const nodeFlagsOf = (service: string): string[] => [...(serviceNodeFlags[service] ?? [])];
