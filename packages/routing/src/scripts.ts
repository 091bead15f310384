import { join } from 'node:path';
import { luaScripts } from '@gateway/config';

/** The Lua scripts of routing (leases, channel health, usage), from `commands/`. */
export const routingScripts = luaScripts(join(import.meta.dirname, 'commands'));
