/**
 * What the queue dashboard shows of a job's data and return value. Two rules, applied in one
 * pass:
 * - nothing secret or derived from a secret, for anyone: a field is hidden when a word of its
 *   name says what it holds (password, hash, digest, key, token, session, secret, cipher…),
 *   and any string is hidden when it has the shape of one (a hex digest, a scrypt or bcrypt
 *   hash, an encrypted channel key, an `sk-` key), whatever its field is called;
 * - client text (prompts, speech text, token ids, logit_bias…) within one budget of characters
 *   per job, counted over every string, number and field name of the payload together, so a
 *   prompt split into many short pieces is cut as surely as one long one.
 */

export type PayloadDisplay = 'truncated' | 'full' | 'none';

/** Characters of client text the board shows per job (DASHBOARD_PAYLOADS=truncated). */
export const SHOWN_CHARACTERS = 200;

export const REDACTED = '[redacted]';

/** Words of a field's name that say it holds a secret or something made from one. */
const SECRET_WORDS = new Set([
  'password', 'passwd', 'pwd', 'hash', 'digest', 'secret', 'key', 'apikey', 'token', 'session', 'authorization',
  'cookie', 'cipher', 'ciphertext', 'credential', 'credentials', 'salt', 'signature', 'nonce', 'mask', 'preview',
]);
/** …unless the name ends in one of these: a token's id or a key's name is no secret. */
const HARMLESS_LAST_WORDS = new Set(['id', 'ids', 'name', 'count', 'limit', 'limits', 'epoch', 'time', 'status']);

/** `password_hash`, `accessTokenHash`, `key-preview` → their words, lower case. */
const wordsOf = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);

export function isSecretField(name: string): boolean {
  const words = wordsOf(name);
  if (words.length === 0 || HARMLESS_LAST_WORDS.has(words.at(-1)!)) return false;
  return words.some((word) => SECRET_WORDS.has(word));
}

/** Shapes of secrets and digests, whatever field they sit in. */
const SECRET_SHAPES = [
  /^[0-9a-f]{32,}$/i, // hex digests (SHA-256 of API keys, access tokens, sessions)
  /^scrypt\$/, // this gateway's password hashes
  /^\$(2[abxy]?|argon2(id|i|d)?|scrypt|pbkdf2[^$]*)\$/, // bcrypt, argon2 and other crypt(3) hashes
  /^enc:v\d+:/, // channel keys encrypted under SECRET_KEY
  /^sk-[A-Za-z0-9_-]{16,}$/, // API keys
];
export const looksSecret = (text: string) => text.length >= 16 && SECRET_SHAPES.some((shape) => shape.test(text));

/** Fields at the top of a job whose values are client text: the budget applies inside them. */
const CLIENT_TEXT_FIELDS = new Set(['payload', 'input']);

interface Walk {
  /** Characters of client text still to show; Infinity outside client text or when shown in full. */
  left: number;
}

const more = (count: number, what: string) => `… [${count} more ${what}]`;

function shownString(text: string, walk: Walk): string {
  if (looksSecret(text)) return REDACTED;
  if (text.length <= walk.left) {
    walk.left -= text.length;
    return text;
  }
  const shown = Math.max(0, walk.left);
  walk.left = 0;
  return `${text.slice(0, shown)}${more(text.length - shown, 'characters')}`;
}

function shownValue(value: unknown, walk: Walk): unknown {
  if (typeof value === 'string') return shownString(value, walk);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    walk.left -= String(value).length;
    return value;
  }
  if (Array.isArray(value)) {
    const shown: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      if (walk.left <= 0) {
        shown.push(more(value.length - i, 'items'));
        break;
      }
      shown.push(shownValue(value[i], walk));
    }
    return shown;
  }
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    const shown: Record<string, unknown> = {};
    for (let i = 0; i < entries.length; i++) {
      if (walk.left <= 0) {
        shown['…'] = more(entries.length - i, 'fields');
        break;
      }
      const [name, field] = entries[i]!;
      walk.left -= name.length;
      shown[name] = isSecretField(name) ? REDACTED : shownValue(field, walk);
    }
    return shown;
  }
  return value;
}

/**
 * A job's data (or return value) as the board shows it. The fields the gateway sets (request id,
 * reply address, deadline, operation, actor) are shown whole; the client's text, under
 * `payload` or `input`, as DASHBOARD_PAYLOADS says, within SHOWN_CHARACTERS in all.
 */
export function shownJobData(data: unknown, payloads: PayloadDisplay): unknown {
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    return shownValue(data, { left: payloads === 'full' ? Infinity : SHOWN_CHARACTERS });
  }
  const shown: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(data)) {
    if (isSecretField(name)) shown[name] = REDACTED;
    else if (!CLIENT_TEXT_FIELDS.has(name)) shown[name] = shownValue(field, { left: Infinity });
    else if (payloads === 'none' && name === 'payload') shown[name] = '[hidden: DASHBOARD_PAYLOADS=none]';
    else shown[name] = shownValue(field, { left: payloads === 'truncated' ? SHOWN_CHARACTERS : Infinity });
  }
  return shown;
}
