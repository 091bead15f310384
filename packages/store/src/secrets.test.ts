import { describe, expect, it } from 'vitest';
import { maskSecret } from './secrets.ts';

describe('a mask', () => {
  it('shows at most a quarter of a key besides its sk- prefix, and all of nothing for a short one', () => {
    expect(maskSecret('sk-upstream-key-that-must-stay-secret-42')).toBe('sk-up********t-42');
    expect(maskSecret('AIzaSyD-channel-key-0123456789abcdefgh')).toBe('AIz********efgh');
    for (const key of ['abcdefghijk', 'vllm-key-12', 'sk-abcdefgh', '0123456789abcdef', 'x'.repeat(10)]) {
      const shown = maskSecret(key).replace(/^sk-/, '').replace(/\*/g, '').length;
      expect(shown, key).toBeLessThanOrEqual(Math.floor(key.replace(/^sk-/, '').length / 4));
    }
  });
});
