import { forbidden, loginBody, Role, sessionBody, sessionDeleteJob, sessionJob, unauthenticated, UserStatus } from '@gateway/contracts';
import { SessionStore, sha256 } from '@gateway/store';
import { operation, ANYONE } from './operation.ts';

/** Dashboard sign-in lasts an hour. */
const SESSION_TTL_SECONDS = 3600;

/** The sign-in of the operations console and the queue dashboard: run from their form, so no route of the management API. */
export const sessionOperations = {
  /**
   * Signs an administrator in: the gateway checks the password and makes the session, the job
   * carrying only its digest; unlike login, the user's access token stays valid.
   */
  'session.create': operation({
    input: loginBody, job: sessionJob, minRole: ANYONE,
    prepare: async (input, tools, address) => {
      const { session, hash } = SessionStore.issue();
      return { input: { ...(await tools.signIn(input.username, input.password, address)), session_hash: hash }, reveal: { session } };
    },
    apply: async ({ store, input }) => {
      const user = await store.users.get(input.user_id);
      // A password changed (or the user disabled) since the gateway checked it refuses the sign-in.
      if (!user || user.session_epoch !== input.session_epoch) throw unauthenticated('invalid username or password');
      if (user.status !== UserStatus.enabled) throw forbidden('this user is disabled');
      if (user.role < Role.admin) throw forbidden('only administrators may sign in to the operations console and the queue dashboard');
      await store.sessions.open(user, input.session_hash, SESSION_TTL_SECONDS);
      return { role: user.role, expires_in: SESSION_TTL_SECONDS };
    },
  }),

  'session.delete': operation({
    input: sessionBody, job: sessionDeleteJob, minRole: ANYONE,
    prepare: async (input) => ({ input: { session_hash: sha256(input.session) } }),
    apply: async ({ store, input }) => {
      await store.sessions.delete(input.session_hash);
      return null;
    },
  }),
};
