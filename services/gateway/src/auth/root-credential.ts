import { Role } from '@gateway/contracts';
import type { UserStore } from '@gateway/store';

/**
 * Whether ADMIN_TOKEN is yet a credential of root's, for `/readyz`: on a first start the admin
 * worker makes it one a moment after the gateway can answer, and a script that waits for
 * readiness and then calls the management API with ADMIN_TOKEN must not get 401 meanwhile.
 * Once seen it stays true (readiness is about start-up: a later change of ADMIN_TOKEN on the
 * admin worker alone should not take every gateway out of its load balancer). Without
 * ADMIN_TOKEN in the gateway's environment there is nothing to wait for.
 */
export function rootCredentialCheck(users: UserStore, adminToken: string | undefined): () => Promise<string | undefined> {
  let seen = adminToken === undefined;
  return async () => {
    if (seen) return undefined;
    const user = await users.findByAccessToken(adminToken!);
    seen = user !== null && user.role === Role.root;
    return seen ? undefined : 'ADMIN_TOKEN is not yet a credential of the root user (is the admin worker running?)';
  };
}
