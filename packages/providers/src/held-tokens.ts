/**
 * OAuth access tokens a process holds for the channels' credentials (a Vertex service account, an
 * Azure service principal): one token a credential, shared by every request of the process, and
 * a new one fetched before it expires. Requests that find it due at once share one fetch. A token
 * the upstream refused (a 401) is dropped, so the next attempt fetches another. A credential is
 * named by an `id` made from it (a hash), never by its secret.
 */

export interface AccessToken {
  value: string;
  /** When to fetch the next one (epoch ms). */
  refreshAt: number;
}

/** The longest a token is kept short of its expiry; a short-lived one is refreshed past half its life. */
const REFRESH_MARGIN_MS = 5 * 60_000;

/**
 * When to fetch the next token: in its last five minutes, or past half its life, whichever comes
 * later (an hour's token is refreshed after 55 minutes, a test's of 4 seconds after 2).
 */
export function refreshTime(askedAt: number, expiresAt: number): number {
  const lifetime = Math.max(0, expiresAt - askedAt);
  return expiresAt - Math.min(REFRESH_MARGIN_MS, lifetime / 2);
}

/** The tokens held for credentials of one kind, fetched by `fetchToken`. */
export class HeldTokens<Credential extends { id: string }> {
  private readonly held = new Map<string, Promise<AccessToken>>();
  private readonly fetchToken: (credential: Credential) => Promise<AccessToken>;

  constructor(fetchToken: (credential: Credential) => Promise<AccessToken>) {
    this.fetchToken = fetchToken;
  }

  /** The access token to send for this credential: the one held, or a new one. */
  async tokenFor(credential: Credential): Promise<string> {
    const entry = this.held.get(credential.id);
    if (entry) {
      const token = await entry.catch(() => undefined);
      if (token && Date.now() < token.refreshAt) return token.value;
      // Due or failed: the first request to see it replaces it; the others wait on its fetch.
      if (this.held.get(credential.id) === entry) this.held.delete(credential.id);
    }
    return (await (this.held.get(credential.id) ?? this.fetchFor(credential))).value;
  }

  /** Forgets the token held for this credential (the upstream refused it). */
  drop(credential: Credential): void {
    this.held.delete(credential.id);
  }

  private fetchFor(credential: Credential): Promise<AccessToken> {
    const fetching = this.fetchToken(credential);
    // A worker serves a few channels; more than that are keys no longer in use.
    if (this.held.size >= 256) this.held.clear();
    this.held.set(credential.id, fetching);
    fetching.catch(() => {
      if (this.held.get(credential.id) === fetching) this.held.delete(credential.id);
    });
    return fetching;
  }
}
