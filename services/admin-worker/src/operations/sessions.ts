import { forbidden, unauthenticated, Role, type AdminJobInput } from '@gateway/contracts';
import type { Store } from '@gateway/store';

/** Dashboard sign-in lasts an hour. */
export const SESSION_TTL_SECONDS = 3600;

/**
 * Signs an administrator, whose password the gateway has checked, in to the operations console and the queue dashboard;
 * unlike login, its access token stays valid.
 */
export async function createSession(store: Store, input: AdminJobInput<'session.create'>) {
  const user = await store.users.get(input.user_id);
  // A password changed (or the user disabled) since the gateway checked it refuses the sign-in.
  if (!user || user.session_epoch !== input.session_epoch) throw unauthenticated('invalid username or password');
  if (user.status !== 1) throw forbidden('this user is disabled');
  if (user.role < Role.admin) throw forbidden('only administrators may sign in to the operations console and the queue dashboard');
  await store.sessions.open(user, input.session_hash, SESSION_TTL_SECONDS);
  return { role: user.role, expires_in: SESSION_TTL_SECONDS };
}

export async function deleteSession(store: Store, input: AdminJobInput<'session.delete'>) {
  await store.sessions.delete(input.session_hash);
  return null;
}
