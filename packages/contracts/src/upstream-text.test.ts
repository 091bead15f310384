import { describe, expect, it } from 'vitest';
import { channelKeySecrets, mentionsAny, redactUpstreamText, replySecretForms, secretForms, withoutSecretForms, withoutSecretFormsIn } from './upstream-text.ts';

describe("a channel key's forms", () => {
  const key = 'Zx9!kQ/7+pL=mw#2uv';

  it('are the key as it is, URL-encoded, in base64 and base64url, and escaped in JSON; for an error in either case too', () => {
    const forms = secretForms(key);
    for (const form of [key, encodeURIComponent(key), Buffer.from(key).toString('base64'), Buffer.from(key).toString('base64url')]) expect(forms).toContain(form);
    expect(secretForms(key, { anyCase: true })).toEqual(expect.arrayContaining([key.toUpperCase(), key.toLowerCase()]));
    expect(secretForms('a"b\\c-long-key')).toContain('a\\"b\\\\c-long-key');
  });

  it('are taken out of text wherever they stand, and leave text without them as it was', () => {
    const text = `${key} ${encodeURIComponent(key)} ${Buffer.from(key).toString('base64')} plain`;
    expect(withoutSecretForms(text, secretForms(key))).toBe('[redacted] [redacted] [redacted] plain');
    const clean = 'nothing secret here';
    expect(withoutSecretForms(clean, secretForms(key))).toBe(clean);
    expect(redactUpstreamText(`bad key ${key.toUpperCase()}`, secretForms(key, { anyCase: true }))).toBe('bad key [redacted]');
  });

  it('are none for a key too short to tell from ordinary text', () => {
    expect(secretForms('test')).toEqual([]);
  });

  it("are taken out of a reply's strings after it is parsed: a key that spells a number leaves the number whole, and one escaped as JSON may escape it is found", () => {
    const digits = '17123456789012345678';
    const text = `{"created":${digits}0,"note":"key ${digits}"}`;
    const forms = replySecretForms(digits);
    expect(mentionsAny(text, forms)).toBe(true);
    expect(withoutSecretFormsIn(JSON.parse(text), forms)).toEqual({ created: Number(`${digits}0`), note: 'key [redacted]' });
    const slashed = 'abc/def/ghi/jkl/mno/pqr';
    const php = `{"text":"${slashed.replaceAll('/', '\\/')}"}`;
    expect(mentionsAny(php, replySecretForms(slashed))).toBe(true);
    expect(withoutSecretFormsIn(JSON.parse(php), replySecretForms(slashed))).toEqual({ text: '[redacted]' });
  });

  it("are none in a reply for a self-hosted placeholder shorter than 20 characters, a word a model may write", () => {
    for (const placeholder of ['not-needed', 'lm-studio', 'sk-no-key-required', 'token-abc123']) expect(replySecretForms(placeholder), placeholder).toEqual([]);
  });
});

describe('a structured credential (a JSON object in the key field)', () => {
  const credential = JSON.stringify({ api_key: 'azure-key-0123456789abcdef0123', entra_token: 'eyJhbGciOi.token-part.signature-part', api_version: '2024-10-21', region: 'eu-west-1' });

  it('has each secret field as a secret, beside the whole key, and not the fields that say where or how', () => {
    expect(channelKeySecrets(credential)).toEqual([credential, 'azure-key-0123456789abcdef0123', 'eyJhbGciOi.token-part.signature-part']);
    expect(channelKeySecrets('sk-plain-key')).toEqual(['sk-plain-key']);
    expect(channelKeySecrets('{not json')).toEqual(['{not json']);
  });

  it('has its inner key taken out of a reply, its API version left', () => {
    const text = 'sent with azure-key-0123456789abcdef0123 at api-version 2024-10-21';
    expect(withoutSecretForms(text, replySecretForms(credential))).toBe('sent with [redacted] at api-version 2024-10-21');
  });
});
