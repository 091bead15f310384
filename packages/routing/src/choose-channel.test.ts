import { describe, expect, it } from 'vitest';
import type { Channel } from '@gateway/contracts';
import { candidateChannels, pickChannel, upstreamModelFor } from './choose-channel.ts';

let nextId = 1;
function channel(fields: Partial<Channel> = {}): Channel {
  return {
    id: nextId++, name: 'c', type: 'openai', key: 'sk-x', base_url: 'http://u', models: ['m'], group: 'default',
    tag: '', priority: 0, weight: 1, model_mapping: {}, max_concurrency: 0, timeout_ms: 1000, status: 1,
    status_reason: '', created_time: 0, used_quota: 0, response_time: 0, ...fields,
  };
}

/** A deterministic random source, so the distribution checks cannot flake. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const never = () => false;

describe('upstreamModelFor', () => {
  it('serves a listed model under its own name, or its mapped name', () => {
    expect(upstreamModelFor(channel({ models: ['a'] }), 'a')).toBe('a');
    expect(upstreamModelFor(channel({ models: ['a'], model_mapping: { a: 'a-2024' } }), 'a')).toBe('a-2024');
  });
  it('serves an alias whose mapping lands on a listed model', () => {
    expect(upstreamModelFor(channel({ models: ['real'], model_mapping: { alias: 'real' } }), 'alias')).toBe('real');
    expect(upstreamModelFor(channel({ models: ['real'], model_mapping: { alias: 'other' } }), 'alias')).toBeUndefined();
    expect(upstreamModelFor(channel({ models: ['real'] }), 'missing')).toBeUndefined();
  });
});

describe('candidateChannels', () => {
  it('keeps enabled channels of the type and the caller group only', () => {
    const ok = channel({ group: 'default,vip' });
    const list = [
      ok,
      channel({ status: 2 }),
      channel({ status: 3 }),
      channel({ type: 'gemini' }),
      channel({ group: 'vip' }),
    ];
    expect(candidateChannels(list, { types: ['openai'], model: 'm', group: 'default' })).toEqual([ok]);
    expect(candidateChannels(list, { types: ['openai'], model: 'm', group: 'vip' }).length).toBe(2);
  });
});

describe('pickChannel', () => {
  it('takes the highest priority tier first, and lower tiers only once it is exhausted', () => {
    const high = channel({ priority: 10 });
    const low = channel({ priority: 1 });
    const tried = new Set<number>();
    expect(pickChannel([low, high], tried, never)).toBe(high);
    tried.add(high.id);
    expect(pickChannel([low, high], tried, never)).toBe(low);
    tried.add(low.id);
    expect(pickChannel([low, high], tried, never)).toBeUndefined();
  });

  it('picks by weight inside a tier', () => {
    const a = channel({ weight: 1 });
    const b = channel({ weight: 3 });
    const random = seeded(42);
    let countA = 0;
    for (let i = 0; i < 10_000; i++) if (pickChannel([a, b], new Set(), never, random) === a) countA++;
    expect(countA / 10_000).toBeGreaterThan(0.22);
    expect(countA / 10_000).toBeLessThan(0.28);
  });

  it('picks uniformly when every weight is 0, and a weight-0 channel only after the others', () => {
    const zeros = [channel({ weight: 0 }), channel({ weight: 0 })];
    const random = seeded(7);
    const counts = new Map<number, number>();
    for (let i = 0; i < 1000; i++) {
      const c = pickChannel(zeros, new Set(), never, random)!;
      counts.set(c.id, (counts.get(c.id) ?? 0) + 1);
    }
    expect([...counts.values()].every((n) => n > 400)).toBe(true);

    const weighted = channel({ weight: 5 });
    const zero = channel({ weight: 0 });
    for (let i = 0; i < 100; i++) expect(pickChannel([zero, weighted], new Set(), never, random)).toBe(weighted);
    expect(pickChannel([zero, weighted], new Set([weighted.id]), never, random)).toBe(zero);
  });

  it('chooses a cooling channel only when no other is left, whatever its priority', () => {
    const cooling = channel({ priority: 100 });
    const healthy = channel({ priority: 0 });
    const isCooling = (id: number) => id === cooling.id;
    expect(pickChannel([cooling, healthy], new Set(), isCooling)).toBe(healthy);
    expect(pickChannel([cooling, healthy], new Set([healthy.id]), isCooling)).toBe(cooling);
  });
});
