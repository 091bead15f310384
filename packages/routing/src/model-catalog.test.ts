import { describe, expect, it } from 'vitest';
import { ChannelStatus, type Channel } from '@gateway/contracts';
import { servedModels } from './model-catalog.ts';

const channel = (overrides: Partial<Channel>): Channel => ({
  id: 1, name: 'c', type: 'openai', key: 'k', base_url: 'http://127.0.0.1:1', models: [], group: 'default', tag: '',
  priority: 0, weight: 1, model_mapping: {}, max_concurrency: 0, timeout_ms: 0, status: ChannelStatus.enabled,
  status_reason: '', created_time: 100, used_quota: 0, response_time: 0, ...overrides,
} as Channel);

describe('servedModels', () => {
  const channels = [
    channel({ id: 1, models: ['gpt-b', 'gpt-a'], model_mapping: { davinci: 'gpt-a', broken: 'not-listed' }, created_time: 300 }),
    channel({ id: 2, models: ['gpt-a'], created_time: 200 }),
    channel({ id: 3, models: ['vip-only'], group: 'vip,pro' }),
    channel({ id: 4, models: ['off'], status: ChannelStatus.manuallyDisabled }),
    channel({ id: 5, type: 'gemini', models: ['tts'] }),
  ];

  it('lists enabled channels of the wire format for the group, aliases included, sorted, each once', () => {
    expect(servedModels(channels, { types: ['openai'], group: 'default', allowed: [] })).toEqual([
      { id: 'davinci', created: 300, types: ['openai'] },
      { id: 'gpt-a', created: 200, types: ['openai'] },
      { id: 'gpt-b', created: 300, types: ['openai'] },
    ]);
  });

  it('lists a model served by channels of several types once, with every type', () => {
    const mixed = [...channels, channel({ id: 6, type: 'anthropic', models: ['gpt-a'] })];
    expect(servedModels(mixed, { types: ['anthropic', 'gemini', 'openai'], group: 'default', allowed: [] }).map((m) => [m.id, m.types])).toEqual([
      ['davinci', ['openai']], ['gpt-a', ['anthropic', 'openai']], ['gpt-b', ['openai']], ['tts', ['gemini']],
    ]);
  });

  it("follows the caller's group and the key's models restriction", () => {
    expect(servedModels(channels, { types: ['openai'], group: 'pro', allowed: [] }).map((m) => m.id)).toEqual(['vip-only']);
    expect(servedModels(channels, { types: ['openai'], group: 'default', allowed: ['gpt-b', 'vip-only'] }).map((m) => m.id)).toEqual(['gpt-b']);
    expect(servedModels(channels, { types: ['gemini'], group: 'default', allowed: [] }).map((m) => m.id)).toEqual(['tts']);
  });
});
