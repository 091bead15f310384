import { createTokenBody, createTokenJob, forbidden, idParam, listTokensQuery, nanosOfUsd, notFound, Role, updateTokenBody, TokenStatus, type Actor, type UpdateTokenBody } from '@gateway/contracts';
import { issueApiKey, publicToken, type Store, type StoredToken } from '@gateway/store';
import { get, operation, post, put, remove } from './operation.ts';
import { assertMayManageUser } from './permissions.ts';

/** A user manages its own keys; an admin also those of users below it. */
async function assertMayManageKeysOf(store: Store, actor: Actor, userId: number, action: 'see' | 'edit'): Promise<void> {
  if (userId === actor.id) return;
  if (actor.role < Role.admin) throw forbidden('you may only manage your own API keys');
  const owner = await store.users.get(userId);
  if (!owner) throw notFound(`no user with id ${userId}`);
  assertMayManageUser(actor, owner, action);
}

async function ownedToken(store: Store, actor: Actor, id: number, action: 'see' | 'edit') {
  const token = await store.tokens.get(id);
  if (!token) throw notFound(`no token with id ${id}`);
  try {
    await assertMayManageKeysOf(store, actor, token.user_id, action);
  } catch {
    // Someone else's key is indistinguishable from none at all.
    throw notFound(`no token with id ${id}`);
  }
  return token;
}

export const tokenOperations = {
  /** The gateway makes the key: the job carries its digest and preview, and the key joins the answer in the gateway. */
  'token.create': operation({
    route: post('/token/'), input: createTokenBody, job: createTokenJob, minRole: Role.common,
    prepare: async (input) => {
      const { key, issued } = issueApiKey();
      return { input: { ...input, ...issued }, reveal: { key } };
    },
    apply: async ({ store, actor, input, once }) => {
      const userId = input.user_id ?? actor.id;
      await assertMayManageKeysOf(store, actor, userId, 'edit');
      const owner = await store.users.get(userId);
      if (!owner) throw notFound(`no user with id ${userId}`);
      const { user_id: _u, key_hash, key_preview, ...fields } = input;
      // The owner's max_keys bounds what it holds in the store, whoever creates the key.
      const { token } = await store.tokens.create({ ...fields, user_id: userId }, { key_hash, key_preview }, owner.max_keys, once);
      return publicToken(token);
    },
  }),

  'token.list': operation({
    route: get('/token/', 'query'), input: listTokensQuery, minRole: Role.common,
    apply: async ({ store, actor, input }) => {
      const userId = input.user_id ?? actor.id;
      await assertMayManageKeysOf(store, actor, userId, 'see');
      const page = await store.tokens.listByUser(userId, input.p, input.page_size);
      return { ...page, items: page.items.map(publicToken) };
    },
  }),

  'token.get': operation({
    route: get('/token/:id', 'params'), input: idParam, minRole: Role.common,
    apply: async ({ store, actor, input }) => publicToken(await ownedToken(store, actor, input.id, 'see')),
  }),

  'token.update': operation({
    route: put('/token/'), input: updateTokenBody, minRole: Role.common,
    apply: async ({ store, actor, input }) => {
      await ownedToken(store, actor, input.id, 'edit');
      const { id, ...changes } = input;
      // Checked against the key as it is when the change is written (an administrator's change
      // landing meanwhile is not undone).
      const allowed = actor.role < Role.admin ? (current: StoredToken) => assertOnlyTightens(current, changes) : undefined;
      return publicToken(await store.tokens.update(id, changes, allowed));
    },
  }),

  'token.delete': operation({
    route: remove('/token/:id'), input: idParam, minRole: Role.common,
    apply: async ({ store, actor, input, once }) => {
      // Run again after its worker died, the job finds its key gone: it was this job that deleted it.
      if (await store.alreadyWritten(once)) return null;
      await ownedToken(store, actor, input.id, 'edit');
      await store.tokens.delete(input.id, once);
      return null;
    },
  }),
};

type TokenChanges = Omit<UpdateTokenBody, 'id'>;

/**
 * A user who is not an administrator may only tighten its own keys: disable, lower the quota,
 * drop unlimited, expire sooner, narrow the models, lower the rate limit, move to batch, rename.
 * Raising any of them, re-enabling a disabled or expired key, or lifting what an administrator
 * set needs an administrator.
 */
function assertOnlyTightens(current: StoredToken, changes: TokenChanges): void {
  const refuse = (field: string, what: string) => {
    throw forbidden(`only an administrator may ${what} (${field})`);
  };
  if (changes.status === TokenStatus.enabled && current.status !== TokenStatus.enabled) refuse('status', 're-enable a key');
  if (changes.remain_quota !== undefined && changes.remain_quota > current.remain_quota) refuse('remain_quota', "raise a key's quota");
  if (changes.unlimited_quota === true && !current.unlimited_quota) refuse('unlimited_quota', 'make a key unlimited');
  if (changes.expired_time !== undefined) {
    const later = changes.expired_time === -1 ? current.expired_time !== -1 : current.expired_time !== -1 && changes.expired_time > current.expired_time;
    if (later) refuse('expired_time', "extend a key's life");
  }
  if (changes.models !== undefined) {
    const widens = changes.models.length === 0 ? current.models.length > 0 : current.models.length > 0 && changes.models.some((m) => !current.models.includes(m));
    if (widens) refuse('models', "widen a key's models");
  }
  if (changes.rpm_limit !== undefined) {
    const lifts = changes.rpm_limit === 0 ? current.rpm_limit > 0 : current.rpm_limit > 0 && changes.rpm_limit > current.rpm_limit;
    if (lifts) refuse('rpm_limit', "raise or lift a key's rate limit");
  }
  if (changes.priority === 'interactive' && current.priority === 'batch') refuse('priority', 'raise a key to interactive');
  if (changes.max_in_flight !== undefined) {
    const lifts = changes.max_in_flight === 0 ? current.max_in_flight > 0 : current.max_in_flight > 0 && changes.max_in_flight > current.max_in_flight;
    if (lifts) refuse('max_in_flight', "raise or lift a key's cap on requests in flight");
  }
  if (changes.max_budget !== undefined) {
    // In nano-dollars, as stored: a budget too small to store would be none.
    const [next, now] = [nanosOfUsd(changes.max_budget), nanosOfUsd(current.max_budget)];
    const lifts = next === 0 ? now > 0 : now > 0 && next > now;
    if (lifts) refuse('max_budget', "raise or lift a key's budget");
  }
  // A period of another length may allow more spend (a daily budget made monthly): an administrator's call.
  if (changes.budget_duration !== undefined && current.max_budget > 0 && changes.budget_duration !== (current.budget_duration || 'none')) {
    refuse('budget_duration', "change the period of a key's budget");
  }
}
