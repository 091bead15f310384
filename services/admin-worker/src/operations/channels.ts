import { notFound, type AdminInput, type AdminJobInput } from '@gateway/contracts';
import { publicChannel, type Store, type WriteOnce } from '@gateway/store';

/** The key arrives encrypted by the gateway, with its mask; this worker never sees it in clear. */
export async function createChannel(store: Store, input: AdminJobInput<'channel.create'>, once: WriteOnce) {
  return publicChannel(await store.channels.create(input, once));
}

export async function updateChannel(store: Store, input: AdminJobInput<'channel.update'>) {
  const { id, ...changes } = input;
  return publicChannel(await store.channels.update(id, changes));
}

export async function listChannels(store: Store, input: AdminInput<'channel.list'>) {
  const page = await store.channels.list(input.p, input.page_size, { tag: input.tag, status: input.status });
  return { ...page, items: page.items.map(publicChannel) };
}

export async function getChannel(store: Store, input: AdminInput<'channel.get'>) {
  const channel = await store.channels.get(input.id);
  if (!channel) throw notFound(`no channel with id ${input.id}`);
  return publicChannel(channel);
}

export async function deleteChannel(store: Store, input: AdminInput<'channel.delete'>, once: WriteOnce) {
  await store.channels.delete(input.id, once);
  return null;
}

export async function setTagStatus(store: Store, input: AdminInput<'channel.disableTag'>, status: 1 | 2) {
  const count = await store.channels.setStatusByTag(input.tag, status, status === 2 ? `disabled by tag "${input.tag}"` : '');
  return { count };
}
