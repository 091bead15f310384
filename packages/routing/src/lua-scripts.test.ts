/**
 * The Lua-scripts-as-files loader of @gateway/config (`luaScripts`, `defineLuaScripts`), tested
 * here because routing is its largest user and has a test Redis at hand.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { defineLuaScripts, luaScripts } from '@gateway/config';
import { useTestRedis, type TestRedis } from '@gateway/testkit';
import { routingScripts } from './scripts.ts';

let server: TestRedis;
beforeAll(async () => {
  server = await useTestRedis();
});
afterAll(async () => {
  await server.close();
});

function commandsFolder(files: Record<string, string>): string {
  const folder = mkdtempSync(join(tmpdir(), 'lua-scripts-'));
  mkdirSync(join(folder, 'includes'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(folder, name), text);
  return folder;
}

describe('Lua scripts as files', () => {
  it('names each command after its file, takes the number of keys from the file name, and runs it with its includes', async () => {
    const folder = commandsFolder({
      'includes/double.lua': 'local function double(x) return x * 2 end',
      'gwTestDouble-1.lua': '--- @include "double"\nreturn double(tonumber(redis.call("INCRBY", KEYS[1], ARGV[1])))',
      'notes.md': 'not a script',
    });
    const scripts = luaScripts(folder);
    expect(scripts.map(({ name, numberOfKeys }) => ({ name, numberOfKeys }))).toEqual([{ name: 'gwTestDouble', numberOfKeys: 1 }]);
    const redis = new Redis(server.url);
    try {
      defineLuaScripts(redis, scripts);
      const double = (key: string, by: number) => (redis as unknown as { gwTestDouble(key: string, by: number): Promise<number> }).gwTestDouble(key, by);
      expect(await double('lua-test:n', 5)).toBe(10);
      expect(await double('lua-test:n', 1)).toBe(12);
    } finally {
      redis.disconnect();
    }
  });

  it('fails when an include is missing, as the scripts are read at start-up, not at the first call', () => {
    const folder = commandsFolder({ 'gwBroken-0.lua': '--- @include "nowhere"\nreturn 1' });
    expect(() => luaScripts(folder)).toThrow(/nowhere\.lua/);
  });

  it("finds routing's own scripts beside its code, every include resolved", () => {
    expect(routingScripts.map((s) => s.name).sort()).toEqual([
      'gwAcquireLeases', 'gwChargeChannel', 'gwChargeToken', 'gwChargeUser', 'gwRecordChannelFailure', 'gwReleaseLease', 'gwRenewLeases',
    ]);
    for (const script of routingScripts) expect(script.lua).not.toMatch(/@include/);
  });
});
