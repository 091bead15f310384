/**
 * Waits until `condition` holds or `timeoutMs` passes, checking every `intervalMs`; resolves
 * either way, so the assertions that follow say what went wrong. For things that arrive a little
 * later than the event that caused them, such as log lines (written asynchronously).
 */
export async function until(condition: () => boolean | Promise<boolean>, { timeoutMs = 5000, intervalMs = 50 } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, intervalMs));
}
