/**
 * Fields by which a request would schedule itself at a shared upstream, which the gateway's fair
 * shares and priorities decide instead. The OpenAI routes pass fields they do not know through,
 * and a batch-priority user's `{"service_tier": "priority", "priority": -100}` reached the
 * upstream as sent: OpenAI's priority tier is billed at a premium the quota does not count, and
 * vLLM's `priority` (lower runs first) put one tenant's requests ahead of every other's in the
 * upstream's own queue (SGLang runs higher values first, so no value but the default is safe
 * either way). So `service_tier` may only be `auto`, `default` or `flex`, and `priority` only 0;
 * a name a case-insensitive server would read as either, spelled otherwise, is refused.
 */
import type { z } from 'zod';
import { foldedName } from './output-length.ts';

const SERVICE_TIERS: ReadonlySet<unknown> = new Set(['auto', 'default', 'flex']);

export function checkSchedulingFields(body: Record<string, unknown>, ctx: z.RefinementCtx): void {
  for (const [name, value] of Object.entries(body)) {
    const folded = foldedName(name);
    if (folded !== 'service_tier' && folded !== 'priority') continue;
    if (folded !== name) {
      ctx.addIssue({ code: 'custom', path: [name], message: `is refused: a server that reads names in any case would take it for ${folded}; send ${folded}` });
    } else if (value == null) {
      continue;
    } else if (name === 'service_tier' && !SERVICE_TIERS.has(value)) {
      ctx.addIssue({ code: 'custom', path: [name], message: 'must be "auto", "default" or "flex": a premium tier costs more than the quota counts, and is not offered through this gateway' });
    } else if (name === 'priority' && value !== 0) {
      ctx.addIssue({ code: 'custom', path: [name], message: 'may only be 0: servers read it in opposite directions (vLLM runs lower values first, SGLang higher), and the gateway, not the request, orders tenants at a shared upstream' });
    }
  }
}
