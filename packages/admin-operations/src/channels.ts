import { ChannelStatus, createChannelBody, createChannelJob, idParam, listChannelsQuery, notFound, tagBody, updateChannelBody, updateChannelJob } from '@gateway/contracts';
import { publicChannel, type Store } from '@gateway/store';
import { get, operation, post, put, remove } from './operation.ts';

export const channelOperations = {
  /** The gateway encrypts the key, with a mask for display: this worker never sees it in clear. */
  'channel.create': operation({
    route: post('/channel/'), input: createChannelBody, job: createChannelJob, minRole: 10,
    prepare: async ({ key, ...rest }, tools) => {
      await tools.checkBaseUrl(rest.base_url);
      return { input: { ...rest, ...tools.sealKey(key) } };
    },
    apply: async ({ store, input, once }) => publicChannel(await store.channels.create(input, once)),
  }),

  'channel.update': operation({
    route: put('/channel/'), input: updateChannelBody, job: updateChannelJob, minRole: 10,
    prepare: async ({ key, ...rest }, tools) => {
      await tools.checkBaseUrl(rest.base_url);
      return { input: key === undefined ? rest : { ...rest, ...tools.sealKey(key) } };
    },
    apply: async ({ store, input: { id, ...changes } }) => publicChannel(await store.channels.update(id, changes)),
  }),

  'channel.list': operation({
    route: get('/channel/', 'query'), input: listChannelsQuery, minRole: 10,
    apply: async ({ store, input }) => {
      const page = await store.channels.list(input.p, input.page_size, { tag: input.tag, status: input.status });
      return { ...page, items: page.items.map(publicChannel) };
    },
  }),

  'channel.get': operation({
    route: get('/channel/:id', 'params'), input: idParam, minRole: 10,
    apply: async ({ store, input }) => {
      const channel = await store.channels.get(input.id);
      if (!channel) throw notFound(`no channel with id ${input.id}`);
      return publicChannel(channel);
    },
  }),

  'channel.delete': operation({
    route: remove('/channel/:id'), input: idParam, minRole: 10,
    apply: async ({ store, input, once }) => {
      await store.channels.delete(input.id, once);
      return null;
    },
  }),

  'channel.disableTag': operation({
    route: post('/channel/tag/disabled'), input: tagBody, minRole: 10,
    apply: ({ store, input }) => setTagStatus(store, input.tag, ChannelStatus.manuallyDisabled),
  }),

  'channel.enableTag': operation({
    route: post('/channel/tag/enabled'), input: tagBody, minRole: 10,
    apply: ({ store, input }) => setTagStatus(store, input.tag, ChannelStatus.enabled),
  }),
};

async function setTagStatus(store: Store, tag: string, status: 1 | 2) {
  const count = await store.channels.setStatusByTag(tag, status, status === 2 ? `disabled by tag "${tag}"` : '');
  return { count };
}
