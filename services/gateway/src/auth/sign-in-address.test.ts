import { describe, expect, it } from 'vitest';
import { NOT_AN_ADDRESS, signInAddress } from './sign-in-address.ts';

describe('signInAddress', () => {
  it('keeps an IPv4 address, and folds its IPv4-mapped IPv6 forms into it', () => {
    expect(signInAddress('203.0.113.7')).toBe('203.0.113.7');
    expect(signInAddress('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(signInAddress('::FFFF:203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts an IPv6 address by its /64, however it is written', () => {
    const block = '2001:db8:0:1::/64';
    for (const ip of ['2001:db8:0:1::1', '2001:0db8:0000:0001:ffff:ffff:ffff:ffff', '2001:db8::1:0:0:0:5', '2001:db8:0:1:1:2:3.4.5.6', '2001:db8:0:1::9%eth0']) {
      expect(signInAddress(ip), ip).toBe(block);
    }
    expect(signInAddress('2001:db8:0:2::1')).not.toBe(block);
    expect(signInAddress('::1')).toBe('0:0:0:0::/64');
  });

  it('takes off the port some proxies write after the address, and counts what is no address under one shared name', () => {
    expect(signInAddress('203.0.113.7:5678')).toBe('203.0.113.7');
    expect(signInAddress('[2001:db8:0:1::1]:443')).toBe('2001:db8:0:1::/64');
    expect(signInAddress('[::ffff:203.0.113.7]:80')).toBe('203.0.113.7');
    // A forwarded header's text is never a key of its own, however long or varied.
    for (const text of ['not-an-ip-' + 'a'.repeat(2000), 'zzz', '10.0.0.256', 'unknown', '']) expect(signInAddress(text), text.slice(0, 20)).toBe(NOT_AN_ADDRESS);
  });
});
