import { unauthenticated, UserStatus, type Actor } from '@gateway/contracts';
import type { UserStore } from '@gateway/store';

const BEARER = /^Bearer\s+/i;

/** The token of an Authorization header: `Bearer` (in any case) and the spaces around it dropped. */
export const bearerToken = (header: string): string => header.trim().replace(BEARER, '').trim();

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
  const token = bearerToken(header);
  if (!token) throw unauthenticated('no credentials: send Authorization: Bearer <access token>');
  const user = await users.findByAccessToken(token);
  if (!user) throw unauthenticated('invalid or revoked access token');
  if (user.status !== UserStatus.enabled) throw unauthenticated('this user is disabled');
  const claimed = headers['new-api-user'];
  if (claimed !== undefined && String(claimed) !== String(user.id)) {
    throw unauthenticated('New-Api-User does not match the access token');
  }
  return { id: user.id, role: user.role };
}
