/**
 * Who may do what to whom. Roles (`Role`): common, admin, root, each above the one before. Nobody creates, edits,
 * deletes or sees a user whose role is equal to or above their own (root may edit root), and
 * nobody grants a role equal to or above their own.
 */
import { forbidden, unauthenticated, Role, type Actor } from '@gateway/contracts';
import { ANYONE } from './operation.ts';

export function requireRole(actor: Actor | null, minRole: number): Actor | null {
  if (minRole === ANYONE) return actor;
  if (!actor) throw unauthenticated('sign in first: send an access token in the Authorization header');
  if (actor.role < minRole) throw forbidden('insufficient privileges for this operation');
  return actor;
}

export type UserAction = 'see' | 'edit' | 'delete';

export function mayManageUser(actor: Actor, target: { id: number; role: number }, action: UserAction): boolean {
  if (target.role < actor.role) return true;
  if (action === 'see' && target.id === actor.id) return true;
  return action === 'edit' && actor.role === Role.root && target.role === Role.root;
}

export function assertMayManageUser(actor: Actor, target: { id: number; role: number }, action: UserAction): void {
  if (!mayManageUser(actor, target, action)) {
    throw forbidden(`you may not ${action} a user whose role is equal to or above your own`);
  }
}

export function assertMayGrant(actor: Actor, role: number): void {
  if (role >= actor.role) throw forbidden(`you may not grant role ${role}: it is not below your own`);
}
