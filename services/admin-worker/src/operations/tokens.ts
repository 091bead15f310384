import { forbidden, notFound, type Actor, type AdminInput } from '@gateway/contracts';
import { publicToken, type Store } from '@gateway/store';
import { assertMayManageUser } from '../permissions.ts';

/** A user manages its own keys; an admin also those of users below it. */
async function assertMayManageKeysOf(store: Store, actor: Actor, userId: number, action: 'see' | 'edit'): Promise<void> {
  if (userId === actor.id) return;
  if (actor.role < 10) throw forbidden('you may only manage your own API keys');
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

export async function createToken(store: Store, actor: Actor, input: AdminInput<'token.create'>) {
  const userId = input.user_id ?? actor.id;
  await assertMayManageKeysOf(store, actor, userId, 'edit');
  const { user_id: _u, ...fields } = input;
  const { token, key } = await store.tokens.create({ ...fields, user_id: userId });
  return { ...publicToken(token), key };
}

export async function listTokens(store: Store, actor: Actor, input: AdminInput<'token.list'>) {
  const userId = input.user_id ?? actor.id;
  await assertMayManageKeysOf(store, actor, userId, 'see');
  const page = await store.tokens.listByUser(userId, input.p, input.page_size);
  return { ...page, items: page.items.map(publicToken) };
}

export async function getToken(store: Store, actor: Actor, input: AdminInput<'token.get'>) {
  return publicToken(await ownedToken(store, actor, input.id, 'see'));
}

export async function updateToken(store: Store, actor: Actor, input: AdminInput<'token.update'>) {
  await ownedToken(store, actor, input.id, 'edit');
  const { id, ...changes } = input;
  return publicToken(await store.tokens.update(id, changes));
}

export async function deleteToken(store: Store, actor: Actor, input: AdminInput<'token.delete'>) {
  await ownedToken(store, actor, input.id, 'edit');
  await store.tokens.delete(input.id);
  return null;
}
