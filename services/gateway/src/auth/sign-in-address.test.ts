import { describe, expect, it } from 'vitest';
import { signInAddress } from './sign-in-address.ts';

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
});
