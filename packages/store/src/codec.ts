/**
 * Records live in Redis hashes, every value a string. A codec says how each field of a record
 * is written and read back. `usd`: dollars to callers, whole nano-dollars in Redis (where the
 * budget scripts add to them as integers).
 */
import { nanosOfUsd, usdOf } from '@gateway/contracts';

type FieldKind = 'int' | 'string' | 'json' | 'bool' | 'usd';
export type Codec<T> = { [K in keyof T]: FieldKind };

export function encodeFields<T>(codec: Codec<T>, values: Partial<T>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const kind = (codec as Record<string, FieldKind>)[field];
    if (!kind) continue;
    out[field] = kind === 'json' ? JSON.stringify(value) : kind === 'bool' ? (value ? '1' : '0') : kind === 'usd' ? String(nanosOfUsd(value as number)) : String(value);
  }
  return out;
}

export function decodeFields<T>(codec: Codec<T>, hash: Record<string, string>): T {
  const out: Record<string, unknown> = {};
  for (const [field, kind] of Object.entries(codec) as [string, FieldKind][]) {
    const raw = hash[field];
    if (kind === 'int') out[field] = raw === undefined || raw === '' ? 0 : Number(raw);
    else if (kind === 'usd') out[field] = raw === undefined || raw === '' ? 0 : usdOf(Number(raw));
    else if (kind === 'bool') out[field] = raw === '1';
    else if (kind === 'json') out[field] = raw === undefined || raw === '' ? undefined : JSON.parse(raw);
    else out[field] = raw ?? '';
  }
  return out as T;
}

/** Seconds since the epoch, as new-api stores times. */
export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Reads many records in one round trip, skipping ids whose record is gone. */
export async function readRecords<T>(
  redis: { pipeline(): { hgetall(key: string): unknown; exec(): Promise<[Error | null, unknown][] | null> } },
  keyOf: (id: string) => string,
  ids: readonly string[],
  decode: (hash: Record<string, string>) => T,
): Promise<T[]> {
  if (ids.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hgetall(keyOf(id));
  const results = (await pipeline.exec()) ?? [];
  return results
    .map(([, hash]) => hash as Record<string, string>)
    .filter((hash) => hash && hash.id)
    .map(decode);
}
