import { join } from 'node:path';
import { luaScripts } from '@gateway/config';

/** The queue package's own Lua scripts (`commands/`): `gwFairJoin`, `gwFairLeave`, `gwPayloadPush`, `gwClaimWaitingJob`. */
export const queueScripts = luaScripts(join(import.meta.dirname, 'commands'));
