import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { CredentialPlaces, UNVOUCHED_PLACES } from './credential-places.ts';

const carrying = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
const bearer = (key: string) => carrying({ authorization: `Bearer ${key}` });

describe('credential places', () => {
  it('puts any number of made-up credentials, of either header, in a few shared places', () => {
    const places = new CredentialPlaces();
    const seen = new Set<number>();
    for (let i = 0; i < 5000; i++) {
      seen.add(places.placeOf(bearer(`sk-made-up-${i}`)));
      seen.add(places.placeOf(carrying({ 'x-goog-api-key': `AIza-made-up-${i}` })));
      seen.add(places.placeOf(carrying({ authorization: `Basic ${i}` })));
    }
    expect(seen.size).toBeLessThanOrEqual(UNVOUCHED_PLACES);
  });

  it('gives an accepted credential a place of its own, however its Bearer is spelt', () => {
    const places = new CredentialPlaces();
    const before = places.placeOf(bearer('sk-real'));
    places.vouchFor(bearer('sk-real'));
    const own = places.placeOf(carrying({ authorization: '  BEARER   sk-real ' }));
    expect(own).not.toBe(before);
    expect(own).toBe(places.placeOf(bearer('sk-real')));
    const madeUp = new Set(Array.from({ length: 1000 }, (_, i) => places.placeOf(bearer(`sk-fake-${i}`))));
    expect(madeUp.has(own)).toBe(false);
    // No credential at all: one place of its own, neither a made-up one's nor a real one's.
    const none = places.placeOf(carrying({}));
    expect(madeUp.has(none)).toBe(false);
    expect(none).not.toBe(own);
  });

  it('keeps one new credential\'s requests together, apart from most other new ones', () => {
    const places = new CredentialPlaces();
    expect(places.placeOf(bearer('sk-new'))).toBe(places.placeOf(bearer('sk-new')));
    const others = Array.from({ length: 1000 }, (_, i) => places.placeOf(bearer(`sk-other-${i}`)));
    const sharing = others.filter((place) => place === places.placeOf(bearer('sk-new'))).length;
    expect(sharing).toBeLessThan(1000 / UNVOUCHED_PLACES * 2);
  });

  it('forgets the oldest accepted credential past its capacity', () => {
    const places = new CredentialPlaces(2);
    const unvouched = places.placeOf(bearer('sk-a'));
    for (const key of ['sk-a', 'sk-b', 'sk-c']) places.vouchFor(bearer(key));
    expect(places.placeOf(bearer('sk-a'))).toBe(unvouched);
    expect(places.placeOf(bearer('sk-c'))).toBeGreaterThanOrEqual(0);
  });
});
