import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ChannelKeyCipher, isEncryptedKey } from './channel-key-cipher.ts';

describe('ChannelKeyCipher', () => {
  const key = randomBytes(32);

  it('round-trips a key, never showing it in the ciphertext, with a fresh IV each time', () => {
    const cipher = new ChannelKeyCipher(key);
    const a = cipher.encrypt('sk-upstream-secret');
    const b = cipher.encrypt('sk-upstream-secret');
    expect(isEncryptedKey(a)).toBe(true);
    expect(a).not.toContain('sk-upstream');
    expect(a).not.toBe(b);
    expect(cipher.decrypt(a)).toBe('sk-upstream-secret');
  });

  it('refuses a ciphertext that was altered, or made under another key', () => {
    const cipher = new ChannelKeyCipher(key);
    const stored = cipher.encrypt('sk-upstream-secret');
    const altered = stored.slice(0, -2) + (stored.endsWith('A') ? 'BB' : 'AA');
    expect(() => cipher.decrypt(altered)).toThrow();
    expect(() => new ChannelKeyCipher(randomBytes(32)).decrypt(stored)).toThrow(/another SECRET_KEY/);
  });

  it('reads what the previous key wrote after a rotation, and writes under the new one', () => {
    const old = new ChannelKeyCipher(key).encrypt('sk-old');
    const rotated = new ChannelKeyCipher(randomBytes(32), key);
    expect(rotated.decrypt(old)).toBe('sk-old');
    expect(rotated.isCurrent(old)).toBe(false);
    expect(rotated.isCurrent(rotated.encrypt('sk-new'))).toBe(true);
  });
});
