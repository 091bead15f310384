/**
 * `npm run rotate-secret-key`: re-encrypts every channel key under SECRET_KEY, reading what was
 * written under SECRET_KEY_PREVIOUS (and keys stored in clear by versions before encryption).
 * Run it once every gateway and model worker runs with both keys; docs/security.md, "Rotating SECRET_KEY", has
 * the whole procedure.
 */
import { loadServiceConfig, requireSecretKey } from '@gateway/config';
import { createRedis, waitForRedis } from '@gateway/queue';
import { ChannelKeyCipher, ChannelStore } from '@gateway/store';

const config = loadServiceConfig('rotate-secret-key');
const cipher = new ChannelKeyCipher(requireSecretKey(config, 'rotate-secret-key'), config.SECRET_KEY_PREVIOUS);
const redis = createRedis(config.redis, { name: 'rotate-secret-key' });
try {
  await waitForRedis(redis, 10_000);
  const rewritten = await new ChannelStore(redis).reencryptKeys(cipher);
  process.stdout.write(`rotate-secret-key: ${rewritten} channel key(s) re-encrypted under the current SECRET_KEY\n`);
} catch (error) {
  process.stderr.write(`rotate-secret-key: ${(error as Error).message}\n`);
  process.exitCode = 1;
} finally {
  redis.disconnect();
}
