/**
 * Lua scripts kept as files, as BullMQ keeps its own: each package that runs scripts has a
 * `commands/` folder of `<command>-<number of keys>.lua` files (`gwAcquireLeases-1.lua`), read
 * once by `luaScripts` and defined on a client with `defineLuaScripts`, so `redis.gwAcquireLeases(
 * key, …)` runs it by EVALSHA (on a Redis Cluster too: every key of one call shares a slot).
 * A line `--- @include "name"` is replaced by `commands/includes/name.lua`, for fragments that
 * several scripts of a package share, or failing that by `lua-includes/name.lua` here, for those
 * every package shares (`now`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisClient } from './redis-target.ts';

export interface LuaScript {
  /** The command name the client gets: the file name before `-<keys>.lua`. */
  name: string;
  numberOfKeys: number;
  lua: string;
}

const FILE = /^(\w+)-(\d+)\.lua$/;
const INCLUDE = /^--- @include "([\w-]+)"$/gm;

/** The scripts of a `commands/` folder, read once: a missing include fails at start-up. */
export function luaScripts(folder: string): readonly LuaScript[] {
  const scripts: LuaScript[] = [];
  for (const file of readdirSync(folder).sort()) {
    const match = FILE.exec(file);
    if (!match) continue;
    const lua = readFileSync(join(folder, file), 'utf8')
      .replace(INCLUDE, (_, name: string) => readFileSync(includePath(folder, name), 'utf8'));
    scripts.push({ name: match[1]!, numberOfKeys: Number(match[2]), lua });
  }
  return scripts;
}

/** A fragment of the folder's own, else a shared one (a name in neither fails at start-up). */
function includePath(folder: string, name: string): string {
  const own = join(folder, 'includes', `${name}.lua`);
  return existsSync(own) ? own : join(import.meta.dirname, 'lua-includes', `${name}.lua`);
}

/** Gives `redis` one command per script; defining a command again on the same client is harmless. */
export function defineLuaScripts(redis: RedisClient, scripts: readonly LuaScript[]): void {
  for (const { name, numberOfKeys, lua } of scripts) redis.defineCommand(name, { numberOfKeys, lua });
}
