import { describe, expect, it } from 'vitest';
import { TenantSlots } from './tenant-slots.ts';

describe('a lane\'s slots between tenants', () => {
  it('gives a newcomer its share beside a tenant holding every slot, and not the tenant holding them', () => {
    const slots = new TenantSlots(16);
    for (let i = 0; i < 16; i++) slots.take(1);
    // The newcomer counted: 16 slots between 2 tenants.
    expect(slots.share()).toBe(8);
    expect(slots.atShare()).toEqual([1]);
    expect(slots.belowShare(2)).toBe(true);
    expect(slots.belowShare(1)).toBe(false);
    slots.take(2);
    expect(slots.belowShare(2)).toBe(true);
    for (let i = 0; i < 7; i++) slots.take(2);
    expect(slots.belowShare(2)).toBe(false);
    expect(slots.atShare()).toEqual([1, 2]);
  });

  it('lets a tenant alone hold every slot, and forgets a tenant whose jobs all ended', () => {
    const slots = new TenantSlots(4);
    for (let i = 0; i < 3; i++) slots.take(7);
    expect(slots.belowShare(7)).toBe(true);
    slots.take(7);
    expect(slots.belowShare(7)).toBe(false);
    for (let i = 0; i < 4; i++) slots.give(7);
    expect(slots.atShare()).toEqual([]);
    expect(slots.share()).toBe(4);
  });

  it('gives each of more tenants than slots one slot at least', () => {
    const slots = new TenantSlots(2);
    slots.take(1);
    slots.take(2);
    expect(slots.share()).toBe(1);
    expect(slots.belowShare(3)).toBe(true);
  });
});
