/**
 * `npm start`: the whole gateway on one machine (see local-stack.ts): an embedded redis-server
 * when neither REDIS_URL nor REDIS_CLUSTER_NODES is set, the gateway and the four workers, and a banner once they are up.
 */
import { dirname, join } from 'node:path';
import { redisTargetOf } from '@gateway/config';
import { startBanner } from './banner.ts';
import { configOrExit, startLocalStack } from './local-stack.ts';

const config = configOrExit();
const stack = await startLocalStack({
  redis: redisTargetOf(config),
  queueShards: config.QUEUE_SHARDS,
  redisDataDir: config.REDIS_DATA_DIR,
  databaseUrl: config.DATABASE_URL,
  // Beside the Redis data unless set, so one REDIS_DATA_DIR keeps a whole local stack apart.
  postgresDataDir: config.POSTGRES_DATA_DIR || join(dirname(config.REDIS_DATA_DIR), 'postgres'),
  redisPort: Number(process.env.EMBEDDED_REDIS_PORT) || undefined,
  port: config.PORT,
  host: config.HOST,
  env: process.env,
  secretKeyFile: process.env.SECRET_KEY_FILE || join(dirname(config.REDIS_DATA_DIR), 'secret-key'),
});
process.stdout.write(startBanner(stack));
