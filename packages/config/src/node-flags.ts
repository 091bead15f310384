/**
 * Node (V8) flags a service runs with; they must be given when the process starts, so whatever
 * starts a service passes them: the test kit and `npm start` from here, and the Dockerfile, the
 * compose file and the `start` scripts of the root and workspace package.json files, which spell
 * them out.
 *
 * The gateway holds every waiting request while its reply is on the way; a burst of thousands
 * arriving at once grows V8's young generation to its 3 × 16 MB default, and most of what it
 * holds then is garbage of requests already enqueued. A 4 MB semi-space keeps that garbage
 * small: `npm run bench`'s 5,000-request burst peaked at 392 MB RSS without it and ~300 MB
 * with it, no slower.
 *
 * The batch worker makes garbage at the same rate for the whole of a batch (each line's job,
 * reply and row): after 20,000 lines its RSS was 336 MB, from 129, with 37 MB of it live (a heap
 * snapshot). The same semi-space: 222 MB, as fast (36 s both). The rest was old-space headroom:
 * V8 lets the old space grow to up to 4 times what is live before it collects, on a machine with
 * this much memory. `--heap-growing-percent=50` lets it grow by half instead, with no cap (a hard
 * cap, `--max-old-space-size=512`, kept it at 136 MB too, but would make a batch of large replies,
 * 128 lines in flight each up to UPSTREAM_MAX_REPLY_BYTES, crash the worker again and again):
 * `BENCH_ONLY=batch BENCH_BATCH=2000,20000,2000 npm run bench`, back to back: 127 → 142 MB over
 * 2,000 lines, 142 → 147 over 20,000 and 144 → 144 over 2,000 more (without it: 127 → 141,
 * 141 → 221, 218 → 218), as fast (20,000 lines in 23.4 s against 22.8), for a little more of the
 * worker's CPU (5.8 s against 4.8 over 20,000 lines: 0.05 ms a line). `--optimize-for-size` held
 * it as flat, but tripled the worker's CPU and the batch took 66 s.
 *
 * The gateway takes the same flag for the text it passes through to clients: 40 streams whose
 * clients read nothing each push the kernel's socket buffers' worth (up to 4 MB, `tcp_wmem`)
 * through it, all of it garbage once written, and that garbage grew its RSS by 160 MB before the
 * old space was collected; with the flag, +65 MB (+41 MB with the smaller credit window,
 * `streamWindowOf`), `test/slow-readers.e2e.test.ts`. Its cost per request was within the
 * bench's noise (`BENCH_ONLY=cost,throughput`, back to back: gateway 0.743 ms of CPU a request
 * and 1,234 req/s at c=64 with it, 0.877 ms and 1,297 req/s without).
 */
export const serviceNodeFlags: Record<string, readonly string[]> = {
  gateway: ['--max-semi-space-size=4', '--heap-growing-percent=50'],
  'batch-worker': ['--max-semi-space-size=4', '--heap-growing-percent=50'],
};

export const nodeFlagsOf = (service: string): string[] => [...(serviceNodeFlags[service] ?? [])];
