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

  it("puts an accepted credential in its user's place, however its Bearer is spelt, apart from made-up ones and requests without one", () => {
    const places = new CredentialPlaces();
    const before = places.placeOf(bearer('sk-real'));
    places.vouchFor(bearer('sk-real'), 1);
    const own = places.placeOf(carrying({ authorization: '  BEARER   sk-real ' }));
    expect(own).not.toBe(before);
    expect(own).toBe(places.placeOf(bearer('sk-real')));
    const madeUp = new Set(Array.from({ length: 1000 }, (_, i) => places.placeOf(bearer(`sk-fake-${i}`))));
    const none = places.placeOf(carrying({}));
    expect(new Set([...madeUp, none, own]).size).toBe(madeUp.size + 2);
  });

  it("holds one place for all of a user's credentials, however many it was accepted with", () => {
    // A user signing in again and again gets a new access token each time (the last one revoked),
    // and can make and delete keys: each accepted once, then refused.
    const places = new CredentialPlaces();
    const tokens = Array.from({ length: 1000 }, (_, i) => bearer(`token-${i}`));
    for (const token of tokens) places.vouchFor(token, 7);
    places.vouchFor(bearer('sk-other-tenant'), 8);
    expect(new Set(tokens.map((token) => places.placeOf(token)))).toEqual(new Set([places.placeOf(tokens[0]!)]));
    expect(places.placeOf(bearer('sk-other-tenant'))).not.toBe(places.placeOf(tokens[0]!));
  });

  it("keeps one new credential's requests together, apart from most other new ones", () => {
    const places = new CredentialPlaces();
    expect(places.placeOf(bearer('sk-new'))).toBe(places.placeOf(bearer('sk-new')));
    const others = Array.from({ length: 1000 }, (_, i) => places.placeOf(bearer(`sk-other-${i}`)));
    const sharing = others.filter((place) => place === places.placeOf(bearer('sk-new'))).length;
    expect(sharing).toBeLessThan(1000 / UNVOUCHED_PLACES * 2);
  });

  it('forgets the credentials not accepted for longest past its capacity, keeping those accepted again', () => {
    const places = new CredentialPlaces(4); // two generations of two
    const unvouched = (key: string) => places.placeOf(bearer(key)) < 0;
    places.vouchFor(bearer('sk-a'), 1);
    places.vouchFor(bearer('sk-b'), 2); // the first generation full: a, b
    places.vouchFor(bearer('sk-c'), 3);
    places.vouchFor(bearer('sk-a'), 1); // a accepted again: the second full with c, a
    places.vouchFor(bearer('sk-d'), 4); // b dropped with the first
    expect(['sk-a', 'sk-b', 'sk-c', 'sk-d'].map(unvouched)).toEqual([false, true, false, false]);
    // Never more than the capacity, however many are accepted.
    for (let i = 0; i < 1000; i++) places.vouchFor(bearer(`sk-${i}`), i);
    const remembered = Array.from({ length: 1000 }, (_, i) => !unvouched(`sk-${i}`)).filter(Boolean).length;
    expect(remembered).toBeLessThanOrEqual(4);
    expect(remembered).toBeGreaterThanOrEqual(2);
  });
});
