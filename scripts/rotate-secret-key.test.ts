import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { ChannelKeyCipher } from '@gateway/store';
import { repoRoot } from '@gateway/testkit';
import { storeTest } from '@gateway/testkit/fixtures';

const it = storeTest();

it('re-encrypts every channel key under the new SECRET_KEY, from the previous key or from clear text, and makes every mask again', async ({ db: { server, store } }) => {
  const [oldKey, newKey] = [randomBytes(32), randomBytes(32)];
  const base = { type: 'openai' as const, base_url: 'http://127.0.0.1:9', models: ['m'] };
  const a = await store.channels.create({ ...base, name: 'a', key: new ChannelKeyCipher(oldKey).encrypt('sk-aaaa-1111'), key_mask: 'sk-aa****1111' });
  const b = await store.channels.create({ ...base, name: 'b', key: 'sk-bbbb-2222-stored-in-clear' });
  // Already under the new key, with a mask made by the earlier rule (7 of its 11 characters).
  const c = await store.channels.create({ ...base, name: 'c', key: new ChannelKeyCipher(newKey).encrypt('abcdefghijk'), key_mask: 'abc********hijk' });

  const run = spawnSync(process.execPath, ['scripts/rotate-secret-key.ts'], {
    cwd: repoRoot, encoding: 'utf8',
    env: { ...process.env, REDIS_URL: server.url, SECRET_KEY: newKey.toString('base64'), SECRET_KEY_PREVIOUS: oldKey.toString('hex') },
  });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/2 channel key\(s\) re-encrypted/);

  const current = new ChannelKeyCipher(newKey);
  const [storedA, storedB] = [(await store.channels.get(a.id))!, (await store.channels.get(b.id))!];
  expect(current.isCurrent(storedA.key) && current.isCurrent(storedB.key)).toBe(true);
  expect(current.decrypt(storedA.key)).toBe('sk-aaaa-1111');
  expect(current.decrypt(storedB.key)).toBe('sk-bbbb-2222-stored-in-clear');
  expect(storedB.key_mask).toBe('sk-bb********lear');
  // Every mask made again by today's rule: at most a quarter of a key besides its sk- prefix.
  expect(storedA.key_mask).toBe('sk-********11');
  expect((await store.channels.get(c.id))!.key_mask).toBe('********jk');
});
