import type { Config } from '@gateway/config';
import { GatewayError, Role } from '@gateway/contracts';
import type { Logger } from '@gateway/log';
import { hashPassword, newAccessToken, type Store } from '@gateway/store';

/**
 * Makes sure the root user exists and that ADMIN_TOKEN is its access token. When neither a
 * root user nor ADMIN_TOKEN exists, a token (and a password, unless ADMIN_PASSWORD is set) is
 * generated and printed this once.
 */
export async function ensureRootUser(store: Store, config: Config, log: Logger): Promise<void> {
  let root = await store.users.findByUsername('root');
  let created = false;
  let generatedPassword: string | undefined;
  if (!root) {
    const password = config.ADMIN_PASSWORD ?? (generatedPassword = newAccessToken());
    try {
      root = await store.users.create({ username: 'root', display_name: 'Root', role: Role.root, password_hash: await hashPassword(password) });
      created = true;
    } catch (error) {
      if (!(error instanceof GatewayError) || error.status !== 409) throw error;
      root = (await store.users.findByUsername('root'))!; // another admin worker was faster
      generatedPassword = undefined;
    }
  }
  // ADMIN_TOKEN is a credential of its own, beside the login token: a root login does not revoke
  // it, and it stops working once the environment no longer sets it.
  await store.users.setEnvToken(root.id, config.ADMIN_TOKEN ?? null);
  if (config.ADMIN_TOKEN) {
    log.info({ userId: root.id }, 'root user ready; ADMIN_TOKEN is one of its access tokens');
    return;
  }
  if (!created) return;
  const token = newAccessToken();
  await store.users.setAccessToken(root.id, token);
  // Shown once, on purpose, outside the (redacting) logger.
  process.stderr.write(
    `\n  Root user created. Access token (shown once): ${token}\n` +
      (generatedPassword ? `  Root password (shown once): ${generatedPassword}\n` : '') +
      '  Keep it as ROOT_TOKEN (export ROOT_TOKEN=…) for the curl lines; ADMIN_TOKEN is a setting, to choose the token yourself.\n\n',
  );
}
