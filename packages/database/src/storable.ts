/**
 * Text as PostgreSQL can store it. A `text` value cannot hold U+0000 (the server refuses the
 * whole statement: "invalid byte sequence for encoding UTF8: 0x00"), and a `jsonb` value
 * refuses the escapes `\u0000` and a lone surrogate (`\ud800`), which JSON.stringify writes for
 * strings that hold them. Any of them can arrive in what clients and upstreams send (a model
 * name, an upstream's error message, a key of batch metadata), and one refused row would fail
 * every row written beside it. Stored text replaces each with U+FFFD, as a UTF-8 decoder does
 * with bytes it cannot read: logs and error texts may be lossy there; a field that must come
 * back exactly (a batch line's custom_id, batch metadata) is refused at its API instead.
 * Every text parameter of a query goes through `storableText` at the pool (`createDatabase`);
 * JSON for a jsonb column goes through `storableJson` where it is made.
 */

const NUL = /\u0000/g;
const REPLACEMENT = '\uFFFD';

const hasNul = (text: string): boolean => text.includes('\u0000');

/** `text` with U+0000 and lone surrogates replaced by U+FFFD. */
export function storableText(text: string): string;
export function storableText(text: string | null | undefined): string | null | undefined;
export function storableText(text: string | null | undefined): string | null | undefined {
  if (typeof text !== 'string') return text;
  const whole = text.isWellFormed() ? text : text.toWellFormed();
  return hasNul(whole) ? whole.replace(NUL, REPLACEMENT) : whole;
}

/** `value` as JSON text a `jsonb` column takes: every string in it, keys included, made storable. */
export function storableJson(value: unknown): string {
  return JSON.stringify(storableValue(value));
}

function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableValue);
  if (value !== null && typeof value === 'object') {
    // toJSON first (a Date), as JSON.stringify would.
    const plain = typeof (value as { toJSON?: unknown }).toJSON === 'function' ? (value as { toJSON(): unknown }).toJSON() : value;
    if (plain !== value) return storableValue(plain);
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [storableText(key), storableValue(inner)]));
  }
  return value;
}
