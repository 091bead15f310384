import { unauthenticated, UserStatus, type Actor } from '@gateway/contracts';
import type { UserStore } from '@gateway/store';

const BEARER = /^Bearer\s+/i;

/** The credential of an Authorization header (an API key or an access token): `Bearer` (in any case) and the spaces around it dropped. */
export const bearerCredential = (header: string): string => header.trim().replace(BEARER, '').trim();

/**
 * Resolves a management caller from `Authorization: [Bearer ]<access token>` and the optional
 * `New-Api-User` header, which must name the same user.
 */
export async function authenticateAccessToken(
  users: UserStore,
  headers: Record<string, string | string[] | undefined>,
): Promise<Actor> {
  const raw = headers.authorization;
  const header = Array.isArray(raw) ? raw[0] : raw;
  if (!header) throw unauthenticated('no credentials: send Authorization: Bearer <access token>');
  const accessToken = bearerCredential(header);
  if (!accessToken) throw unauthenticated('no credentials: send Authorization: Bearer <access token>');
  const user = await users.findByAccessToken(accessToken);
  if (!user) throw unauthenticated('invalid or revoked access token');
  if (user.status !== UserStatus.enabled) throw unauthenticated('this user is disabled');
  const claimed = headers['new-api-user'];
  if (claimed !== undefined && String(claimed) !== String(user.id)) {
    throw unauthenticated('New-Api-User does not match the access token');
  }
  return { id: user.id, role: user.role };
}
