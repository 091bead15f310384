/**
 * Channel keys at rest: AES-256-GCM (node:crypto) under SECRET_KEY. The gateway encrypts a key
 * before it enqueues it, the store keeps only the ciphertext (and a mask to show), and only the
 * model workers, which call the upstream, decrypt. A ciphertext names the key it was made with
 * (the first 8 hex digits of the key's SHA-256), so after a rotation the previous key still
 * reads what it wrote until `npm run rotate-secret-key` has rewritten everything.
 *
 *     enc:v1:<key id>:<iv, base64url>:<auth tag, base64url>:<ciphertext, base64url>
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const PREFIX = 'enc:v1:';
/** Decrypted keys kept in memory (a worker calls the same few channels again and again). */
const REVEALED_MAX = 1024;

const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 8);

export const isEncryptedKey = (stored: string) => stored.startsWith(PREFIX);

export class ChannelKeyCipher {
  private readonly current: { id: string; key: Buffer };
  private readonly keys = new Map<string, Buffer>();
  /** Ciphertext → key in clear: decryption costs more than the rest of a request's routing. */
  private readonly revealed = new Map<string, string>();

  /** `current` encrypts and decrypts; `previous` (the key before a rotation) only decrypts. */
  constructor(current: Buffer, previous?: Buffer) {
    if (current.length !== 32) throw new Error('SECRET_KEY must be 32 bytes');
    this.current = { id: keyId(current), key: current };
    this.keys.set(this.current.id, current);
    if (previous) this.keys.set(keyId(previous), previous);
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${PREFIX}${this.current.id}:${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${body.toString('base64url')}`;
  }

  /** The key in clear. Throws when it was made under a key this process does not have, or was altered. */
  decrypt(stored: string): string {
    let plain = this.revealed.get(stored);
    if (plain === undefined) {
      plain = this.decryptNow(stored);
      if (this.revealed.size >= REVEALED_MAX) this.revealed.clear();
      this.revealed.set(stored, plain);
    }
    return plain;
  }

  private decryptNow(stored: string): string {
    if (!isEncryptedKey(stored)) throw new Error('the channel key is not encrypted (re-enter it, or run npm run rotate-secret-key)');
    const [id, iv, tag, body] = stored.slice(PREFIX.length).split(':');
    const key = this.keys.get(id ?? '');
    if (!key || !iv || !tag || body === undefined) throw new Error(`the channel key was encrypted under another SECRET_KEY (key id ${id})`);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** True when `stored` is encrypted under the current key (nothing for a rotation to do). */
  isCurrent(stored: string): boolean {
    return stored.startsWith(`${PREFIX}${this.current.id}:`);
  }
}
