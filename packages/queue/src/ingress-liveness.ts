import type { Redis } from './redis-connection.ts';
import { ingressKey } from './reply-keys.ts';

/**
 * A worker's view of which ingress instances are alive (their heartbeat key exists), checked
 * at most once a second per ingress. When Redis cannot say, an ingress counts as alive.
 */
export class IngressLiveness {
  private readonly redis: Redis;
  private readonly known = new Map<string, { alive: boolean; at: number }>();
  private readonly maxAgeMs: number;

  constructor(redis: Redis, maxAgeMs = 1000) {
    this.redis = redis;
    this.maxAgeMs = maxAgeMs;
  }

  async isAlive(ingressId: string): Promise<boolean> {
    const now = Date.now();
    const cached = this.known.get(ingressId);
    if (cached && now - cached.at < this.maxAgeMs) return cached.alive;
    let alive = true;
    try {
      alive = (await this.redis.exists(ingressKey(ingressId))) === 1;
    } catch {
      alive = true;
    }
    if (this.known.size > 10_000) this.known.clear();
    this.known.set(ingressId, { alive, at: now });
    return alive;
  }
}
