import {
  badRequest, conflict, createUserBody, createUserJob, forbidden, idParam, listUsersQuery, loginBody, loginJob, notFound, unauthenticated,
  updateUserBody, updateUserJob, Role, UserStatus,
} from '@gateway/contracts';
import { newAccessToken, publicUser, sha256, type Store, type UserChanges } from '@gateway/store';
import { z } from 'zod';
import { get, operation, post, put, remove, ANYONE } from './operation.ts';
import { assertMayGrant, assertMayManageUser, mayManageUser } from './permissions.ts';

export const userOperations = {
  /**
   * Signs a user in: the gateway checks the password and makes the access token, the job
   * carrying only its digest; the previous token is revoked.
   */
  'user.login': operation({
    route: post('/user/login'), input: loginBody, job: loginJob, minRole: ANYONE,
    prepare: async (input, tools, address) => {
      const accessToken = newAccessToken();
      const signedIn = await tools.signIn(input.username, input.password, address);
      return { input: { ...signedIn, access_token_hash: sha256(accessToken) }, reveal: { access_token: accessToken } };
    },
    apply: async ({ store, input }) => {
      const user = await store.users.get(input.user_id);
      if (!user || user.session_epoch !== input.session_epoch) throw unauthenticated('invalid username or password');
      if (user.status !== UserStatus.enabled) throw forbidden('this user is disabled');
      await store.users.setAccessTokenHash(user.id, input.access_token_hash);
      // The gateway adds the token it made to the answer: it never travels through Redis.
      return { id: user.id, username: user.username, role: user.role };
    },
  }),

  'user.self': operation({
    route: get('/user/self', 'none'), input: z.strictObject({}), minRole: Role.common,
    apply: async ({ store, actor }) => {
      const user = await store.users.get(actor.id);
      if (!user) throw notFound('your user no longer exists');
      return publicUser(user);
    },
  }),

  /** The gateway hashes the password (scrypt): the job carries the hash. */
  'user.create': operation({
    route: post('/user/'), input: createUserBody, job: createUserJob, minRole: Role.admin,
    prepare: async ({ password, ...rest }, tools) => ({
      input: { ...rest, password_hash: await tools.hashPassword(password), id_above: await tools.highestUserIdOnRecord() },
    }),
    apply: async ({ store, actor, input, once }) => {
      const role = input.role ?? Role.common;
      assertMayGrant(actor, role);
      const user = await store.users.create({
        username: input.username,
        password_hash: input.password_hash,
        display_name: input.display_name ?? input.username,
        role,
        quota: input.quota ?? 0,
        group: input.group ?? 'default',
        ...definedOnly({ rpm_limit: input.rpm_limit, models: input.models, priority: input.priority, max_keys: input.max_keys, max_in_flight: input.max_in_flight,
          max_budget: input.max_budget, budget_duration: input.budget_duration }),
      }, once, input.id_above);
      return publicUser(user);
    },
  }),

  'user.update': operation({
    route: put('/user/'), input: updateUserBody, job: updateUserJob, minRole: Role.admin,
    prepare: async ({ password, ...rest }, tools) => ({
      input: password === undefined ? rest : { ...rest, password_hash: await tools.hashPassword(password) },
    }),
    apply: async ({ store, actor, input, once }) => {
      const target = await store.users.get(input.id);
      if (!target) throw notFound(`no user with id ${input.id}`);
      assertMayManageUser(actor, target, 'edit');
      if (input.role !== undefined && input.role !== target.role) assertMayGrant(actor, input.role);
      if (target.id === actor.id && input.status === UserStatus.disabled) throw badRequest('you may not disable yourself', 'status');
      const demoted = input.role !== undefined && input.role < Role.root;
      if (target.role === Role.root && (demoted || input.status === UserStatus.disabled)) await assertAnotherRoot(store, target.id);
      const { id: _id, ...changes } = input satisfies UserChanges & { id: number };
      return publicUser(await store.users.update(input.id, changes, once));
    },
  }),

  'user.list': operation({
    route: get('/user/', 'query'), input: listUsersQuery, minRole: Role.admin,
    apply: async ({ store, actor, input }) => {
      const all = await store.users.list(1, Number.MAX_SAFE_INTEGER, input.keyword);
      const visible = all.items.filter((u) => mayManageUser(actor, u, 'see') && u.id !== actor.id);
      const start = (input.p - 1) * input.page_size;
      return {
        items: visible.slice(start, start + input.page_size).map(publicUser),
        total: visible.length,
        page: input.p,
        page_size: input.page_size,
      };
    },
  }),

  'user.get': operation({
    route: get('/user/:id', 'params'), input: idParam, minRole: Role.admin,
    apply: async ({ store, actor, input }) => {
      const user = await store.users.get(input.id);
      if (!user) throw notFound(`no user with id ${input.id}`);
      assertMayManageUser(actor, user, 'see');
      return publicUser(user);
    },
  }),

  'user.delete': operation({
    route: remove('/user/:id'), input: idParam, minRole: Role.admin,
    apply: async ({ store, actor, input, once }) => {
      const user = await store.users.get(input.id);
      // Run again after its worker died between the user's deletion and its keys', the job finishes the keys.
      const rerun = !user && (await store.alreadyWritten(once));
      if (!user && !rerun) throw notFound(`no user with id ${input.id}`);
      if (user) {
        assertMayManageUser(actor, user, 'delete');
        if (user.role === Role.root) await assertAnotherRoot(store, user.id);
        // The user goes first, so its keys stop working at once; then its keys.
        await store.users.delete(user.id, once);
      }
      for (const tokenId of await store.tokens.idsOfUser(input.id)) {
        await store.tokens.delete(tokenId).catch(() => {});
      }
      return null;
    },
    after: (input, tools) => tools.forgetUser(input.id),
  }),
};

function definedOnly<T extends object>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The last enabled root may not be demoted, disabled or deleted: nothing could make a new one. */
async function assertAnotherRoot(store: Store, rootId: number): Promise<void> {
  const all = await store.users.list(1, Number.MAX_SAFE_INTEGER);
  if (!all.items.some((u) => u.id !== rootId && u.role === Role.root && u.status === UserStatus.enabled)) {
    throw conflict('this is the last enabled root user: it may not be demoted, disabled or deleted');
  }
}
