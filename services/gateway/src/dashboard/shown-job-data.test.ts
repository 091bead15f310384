import { describe, expect, it } from 'vitest';
import { hashPassword, issueApiKey, sha256 } from '@gateway/store';
import { isSecretField, REDACTED, SHOWN_CHARACTERS, shownJobData } from './shown-job-data.ts';

const textOf = (value: unknown) => JSON.stringify(value);

describe('what the dashboard shows of a job', () => {
  it('hides every field named for a secret or made from one, and any value shaped like one', async () => {
    const hash = await hashPassword('correct horse battery');
    const { key, issued } = issueApiKey();
    const data = {
      requestId: 'r-1',
      operation: 'user.update',
      input: {
        id: 1, password_hash: hash, access_token_hash: sha256('t'), session_hash: sha256('s'), ...issued,
        key: 'enc:v1:abc:def:ghi:jkl', key_mask: 'sk-ab********wxyz', token_id: 7, session_epoch: 3,
        // Misnamed fields are still caught by their shape.
        note: hash, other: sha256('x'), leaked: key, bcrypt: '$2b$10$abcdefghijklmnopqrstuv',
        nested: [{ accessTokenHash: 'whatever' }, { 'x-goog-api-key': 'AIza-something' }],
      },
    };
    const shown = shownJobData(data, 'full') as any;
    const text = textOf(shown);
    for (const secret of [hash, sha256('t'), sha256('s'), issued.key_hash, issued.key_preview, key, 'enc:v1', 'sk-ab***', '$2b$', 'whatever', 'AIza']) {
      expect(text).not.toContain(secret);
    }
    expect(shown.input).toMatchObject({ id: 1, token_id: 7, session_epoch: 3, password_hash: REDACTED, note: REDACTED });
    expect(shown.requestId).toBe('r-1');
  });

  it('names fields by their words, so max_tokens or a key id stay visible', () => {
    expect(isSecretField('max_tokens')).toBe(false);
    expect(isSecretField('token_id')).toBe(false);
    expect(isSecretField('apiKeyId')).toBe(false);
    expect(isSecretField('passwordHash')).toBe(true);
    expect(isSecretField('key_preview')).toBe(true);
    expect(isSecretField('encrypted-channel-key')).toBe(true);
  });

  it('bounds the client text of a whole job, not each string', () => {
    const pieces = Array.from({ length: 28 }, (_, i) => `piece-${String(i).padStart(2, '0')}-${'x'.repeat(40)}`);
    const shown = textOf(shownJobData({ requestId: 'r', payload: { body: { prompt: pieces } } }, 'truncated'));
    expect(shown).toContain('piece-00');
    expect(shown).not.toContain('piece-27');
    expect(shown).toMatch(/more items/);
  });

  it('bounds token-id arrays, Gemini parts and logit_bias maps too', () => {
    const tokens = Array.from({ length: 5000 }, (_, i) => 10_000 + i);
    const parts = Array.from({ length: 300 }, (_, i) => ({ text: `p${i}` }));
    const bias = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [String(i), 1]));
    for (const body of [{ prompt: [tokens, tokens] }, { contents: [{ parts }] }, { logit_bias: bias }]) {
      const shown = textOf(shownJobData({ payload: { body } }, 'truncated'));
      // Within the budget, plus field names, separators and the "… [n more]" notes.
      expect(shown.length).toBeLessThan(SHOWN_CHARACTERS * 3);
      expect(shown).toMatch(/more (items|fields)/);
    }
  });

  it('shows everything but secrets when asked for full payloads, and no payload when asked for none', () => {
    const pieces = Array.from({ length: 28 }, (_, i) => `piece-${i}-${'x'.repeat(40)}`);
    expect(textOf(shownJobData({ payload: { prompt: pieces } }, 'full'))).toContain('piece-27');
    const none = shownJobData({ requestId: 'r', payload: { prompt: pieces } }, 'none') as any;
    expect(none).toEqual({ requestId: 'r', payload: '[hidden: DASHBOARD_PAYLOADS=none]' });
  });
});
