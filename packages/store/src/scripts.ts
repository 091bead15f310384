import { join } from 'node:path';
import { luaScripts } from '@gateway/config';

/** The Lua scripts of the store (record writes, channel status by tag), from `commands/`. */
export const storeScripts = luaScripts(join(import.meta.dirname, 'commands'));
