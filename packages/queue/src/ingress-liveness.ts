import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from './redis-connection.ts';
import { INGRESS_HEARTBEAT_MS, INGRESS_TTL_MS, ingressKey } from './reply-keys.ts';

/**
 * A worker's view of which ingress instances are alive (their heartbeat key exists). An ingress
 * seen alive is checked again after a second; one seen gone, after its key's TTL. When Redis
 * cannot say, an ingress counts as alive.
 */
export class IngressLiveness {
  private readonly redis: Redis;
  private readonly known = new Map<string, { alive: boolean; at: number }>();
  /** Checks under way, shared by the jobs of one ingress that start meanwhile. */
  private readonly checking = new Map<string, Promise<boolean>>();
  private readonly maxAgeMs: number;
  private readonly confirmAfterMs: number;

  constructor(redis: Redis, { maxAgeMs = 1000, confirmAfterMs = INGRESS_HEARTBEAT_MS + 500 } = {}) {
    this.redis = redis;
    this.maxAgeMs = maxAgeMs;
    this.confirmAfterMs = confirmAfterMs;
  }

  async isAlive(ingressId: string): Promise<boolean> {
    const cached = this.known.get(ingressId);
    if (cached && Date.now() - cached.at < (cached.alive ? this.maxAgeMs : INGRESS_TTL_MS)) return cached.alive;
    let check = this.checking.get(ingressId);
    if (!check) {
      check = this.check(ingressId).finally(() => this.checking.delete(ingressId));
      this.checking.set(ingressId, check);
    }
    return check;
  }

  private async check(ingressId: string): Promise<boolean> {
    // A missing key is confirmed one heartbeat later: when the Redis Cluster master holding it
    // failed over for longer than its TTL, it is gone until the gateway's next beat lands, and
    // the gateway's jobs must not be dropped meanwhile.
    let alive = await this.exists(ingressId);
    if (!alive) {
      await sleep(this.confirmAfterMs);
      alive = await this.exists(ingressId);
    }
    if (this.known.size > 10_000) this.known.clear();
    this.known.set(ingressId, { alive, at: Date.now() });
    return alive;
  }

  private async exists(ingressId: string): Promise<boolean> {
    try {
      return (await this.redis.exists(ingressKey(ingressId))) === 1;
    } catch {
      return true;
    }
  }
}
