import { describe, expect, it } from 'vitest';
import { ChannelStatus, type Channel } from '@gateway/contracts';
import { planStickiness, preferFirst, stickyOutcome } from './sticky-choice.ts';

let nextId = 1;
function channel(fields: Partial<Channel> = {}): Channel {
  return {
    id: nextId++, name: 'c', type: 'openai', key: 'sk-x', base_url: 'http://u', models: ['m'], group: 'default',
    tag: '', priority: 0, weight: 1, model_mapping: {}, max_concurrency: 0, timeout_ms: 1000, status: 1,
    status_reason: '', created_time: 0, used_quota: 0, response_time: 0, ...fields,
  };
}
const never = () => false;

describe('planStickiness', () => {
  const a = channel();
  const b = channel();

  it('is new without a remembered channel, and prefers the remembered one while it may serve', () => {
    expect(planStickiness(undefined, [a, b], [a, b], never)).toEqual({ outcome: 'new' });
    expect(planStickiness(b.id, [a, b], [a, b], never)).toEqual({ prefer: b });
  });

  it('says why it moves: deleted or no longer serving, disabled, cooling down, outranked', () => {
    expect(planStickiness(999, [a, b], [a, b], never)).toEqual({ outcome: 'moved:gone' });
    const disabled = { ...b, status: ChannelStatus.manuallyDisabled };
    expect(planStickiness(b.id, [a, disabled], [a], never)).toEqual({ outcome: 'moved:disabled' });
    expect(planStickiness(b.id, [a, { ...b, status: ChannelStatus.autoDisabled }], [a], never)).toEqual({ outcome: 'moved:disabled' });
    // Enabled, but no longer for the caller's group: not a candidate.
    expect(planStickiness(b.id, [a, b], [a], never)).toEqual({ outcome: 'moved:gone' });
    expect(planStickiness(b.id, [a, b], [a, b], (id) => id === b.id)).toEqual({ outcome: 'moved:unhealthy' });
    const primary = channel({ priority: 10 });
    expect(planStickiness(b.id, [a, b, primary], [a, b, primary], never)).toEqual({ outcome: 'moved:outranked' });
    // A higher-priority channel that cools down does not outrank it.
    expect(planStickiness(b.id, [a, b, primary], [a, b, primary], (id) => id === primary.id)).toEqual({ prefer: b });
  });
});

describe('preferFirst and stickyOutcome', () => {
  const a = channel();
  const b = channel();
  const c = channel();

  it('offers the preferred channel first when it is in the order, and the order unchanged otherwise', () => {
    expect(preferFirst([a, b, c], b).map((x) => x.id)).toEqual([b.id, a.id, c.id]);
    expect(preferFirst([a, c], b).map((x) => x.id)).toEqual([a.id, c.id]);
    expect(preferFirst([a, c], undefined).map((x) => x.id)).toEqual([a.id, c.id]);
  });

  it('is kept when the preferred channel served, and else says why it did not', () => {
    const plan = { prefer: b };
    expect(stickyOutcome(plan, b.id, { failed: false, resting: false })).toBe('kept');
    expect(stickyOutcome(plan, a.id, { failed: true, resting: false })).toBe('moved:failed');
    expect(stickyOutcome(plan, a.id, { failed: false, resting: true })).toBe('moved:rate-limited');
    expect(stickyOutcome(plan, a.id, { failed: false, resting: false })).toBe('moved:full');
    expect(stickyOutcome({ outcome: 'moved:disabled' }, a.id, { failed: false, resting: false })).toBe('moved:disabled');
  });
});
