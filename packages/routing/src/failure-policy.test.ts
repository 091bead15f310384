import { describe, expect, it } from 'vitest';
import { UpstreamError } from '@gateway/contracts';
import { decideOnFailure, exhaustedError, MAX_UPSTREAM_REST_MS } from './failure-policy.ts';

const http = (status: number, extra: { retryAfter?: number; message?: string } = {}) =>
  new UpstreamError({ kind: 'http', status, message: `upstream answered ${status}`, retryAfter: extra.retryAfter, body: { error: { message: extra.message ?? 'no', type: 'x' } } });

describe('what a failure means for the channel', () => {
  it('counts only what the channel is to blame for: a 401 toward its auto-disable, a 5xx or time-out toward its cooldown, a 403 for nothing', () => {
    expect(decideOnFailure(http(401))).toMatchObject({ action: 'failover', auth: true, counts: true, byRequest: false });
    expect(decideOnFailure(http(500))).toMatchObject({ action: 'failover', auth: false, counts: true, byRequest: true });
    expect(decideOnFailure(new UpstreamError({ kind: 'timeout', message: 't' }))).toMatchObject({ action: 'failover', counts: true, byRequest: true });
    expect(decideOnFailure(new UpstreamError({ kind: 'connection', message: 'refused' }))).toMatchObject({ action: 'failover', counts: true, byRequest: false });
    // Flagged input, another project's file: fail over, but neither cool nor disable the channel.
    expect(decideOnFailure(http(403))).toMatchObject({ action: 'failover', auth: false, counts: false });
    // All channels refused it: the upstream's 403, as it came.
    expect(exhaustedError(http(403, { message: 'flagged' }), 2)).toMatchObject({ status: 403, message: 'flagged' });
  });

  it("returns the request's own failures as they are: a reply past the gateway's limits, a 429 for a request too large for the limit a minute", () => {
    const tooLarge = new UpstreamError({ kind: 'protocol', message: "the upstream reply is larger than 10 bytes (the gateway's limit)", ofTheRequest: true });
    expect(decideOnFailure(tooLarge)).toMatchObject({ action: 'return', error: { status: 502 } });
    expect(decideOnFailure(new UpstreamError({ kind: 'protocol', message: 'malformed' }))).toMatchObject({ action: 'failover', counts: true });
    expect(decideOnFailure(http(429, { retryAfter: 3600, message: 'Request too large for gpt-4 on tokens per min (TPM): Limit 10000, Requested 900000.' })))
      .toMatchObject({ action: 'return', error: { status: 429 } });
  });

  it("rests a rate-limited channel at most a minute, whatever its Retry-After says", () => {
    expect(decideOnFailure(http(429, { retryAfter: 3600 }))).toEqual({ action: 'back-off', retryAfterMs: MAX_UPSTREAM_REST_MS });
    expect(decideOnFailure(http(429, { retryAfter: 2 }))).toEqual({ action: 'back-off', retryAfterMs: 2000 });
    expect(decideOnFailure(http(429))).toEqual({ action: 'back-off', retryAfterMs: undefined });
  });
});
