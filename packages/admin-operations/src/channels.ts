import { ChannelStatus, createChannelBody, createChannelJob, idParam, listChannelsQuery, notFound, tagBody, updateChannelBody, updateChannelJob, Role } from '@gateway/contracts';
import { publicChannel, type Store } from '@gateway/store';
import { get, operation, post, put, remove } from './operation.ts';

export const channelOperations = {
  /** The gateway encrypts the key, with a mask for display: this worker never sees it in clear. */
  'channel.create': operation({
    route: post('/channel/'), input: createChannelBody, job: createChannelJob, minRole: Role.admin,
    prepare: async ({ key, ...rest }, tools) => {
      tools.checkChannelKey(key, rest.type);
      await tools.checkBaseUrl(rest.base_url);
      return { input: { ...rest, ...tools.sealKey(key) } };
    },
    apply: async ({ store, input, once }) => publicChannel(await store.channels.create(input, once)),
  }),

  'channel.update': operation({
    route: put('/channel/'), input: updateChannelBody, job: updateChannelJob, minRole: Role.admin,
    prepare: async ({ key, ...rest }, tools) => {
      // A new type comes with a key (the schema says so); a new key alone is for the stored type.
      if (key !== undefined) tools.checkChannelKey(key, rest.type ?? (await tools.channelType(rest.id)));
      await tools.checkBaseUrl(rest.base_url);
      return { input: key === undefined ? rest : { ...rest, ...tools.sealKey(key) } };
    },
    apply: async ({ store, input: { id, ...changes } }) => publicChannel(await store.channels.update(id, changes)),
  }),

  'channel.list': operation({
    route: get('/channel/', 'query'), input: listChannelsQuery, minRole: Role.admin,
    apply: async ({ store, input }) => {
      const page = await store.channels.list(input.p, input.page_size, { tag: input.tag, status: input.status });
      return { ...page, items: page.items.map(publicChannel) };
    },
  }),

  'channel.get': operation({
    route: get('/channel/:id', 'params'), input: idParam, minRole: Role.admin,
    apply: async ({ store, input }) => {
      const channel = await store.channels.get(input.id);
      if (!channel) throw notFound(`no channel with id ${input.id}`);
      return publicChannel(channel);
    },
  }),

  'channel.delete': operation({
    route: remove('/channel/:id'), input: idParam, minRole: Role.admin,
    apply: async ({ store, input, once }) => {
      await store.channels.delete(input.id, once);
      return null;
    },
  }),

  'channel.disableTag': operation({
    route: post('/channel/tag/disabled'), input: tagBody, minRole: Role.admin,
    apply: ({ store, input }) => setTagStatus(store, input.tag, ChannelStatus.manuallyDisabled),
  }),

  'channel.enableTag': operation({
    route: post('/channel/tag/enabled'), input: tagBody, minRole: Role.admin,
    apply: ({ store, input }) => setTagStatus(store, input.tag, ChannelStatus.enabled),
  }),
};

async function setTagStatus(store: Store, tag: string, status: typeof ChannelStatus.enabled | typeof ChannelStatus.manuallyDisabled) {
  const count = await store.channels.setStatusByTag(tag, status, status === ChannelStatus.manuallyDisabled ? `disabled by tag "${tag}"` : '');
  return { count };
}
