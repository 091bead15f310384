import { describe, expect, it } from 'vitest';
import { Role } from '@gateway/contracts';
import { ANYONE } from './operation.ts';
import { assertMayGrant, mayManageUser, requireRole } from './permissions.ts';

const root = { id: 1, role: Role.root };
const admin = { id: 2, role: Role.admin };
const common = { id: 3, role: Role.common };

describe('role rules', () => {
  it('lets a role manage only users below it, and root edit root', () => {
    expect(mayManageUser(admin, { id: 9, role: Role.common }, 'edit')).toBe(true);
    expect(mayManageUser(admin, { id: 9, role: Role.admin }, 'edit')).toBe(false);
    expect(mayManageUser(admin, { id: 1, role: Role.root }, 'see')).toBe(false);
    expect(mayManageUser(root, { id: 9, role: Role.admin }, 'delete')).toBe(true);
    expect(mayManageUser(root, { id: 1, role: Role.root }, 'edit')).toBe(true);
    expect(mayManageUser(root, { id: 7, role: Role.root }, 'delete')).toBe(false);
    expect(mayManageUser(admin, { id: 2, role: Role.admin }, 'see')).toBe(true);
  });

  it('refuses to grant a role equal to or above the granter', () => {
    expect(() => assertMayGrant(admin, Role.common)).not.toThrow();
    expect(() => assertMayGrant(admin, Role.admin)).toThrow(/role 10/);
    expect(() => assertMayGrant(root, Role.admin)).not.toThrow();
    expect(() => assertMayGrant(root, Role.root)).toThrow();
  });

  it('answers 401 to nobody and 403 to a role too low', () => {
    expect(() => requireRole(null, Role.admin)).toThrow(expect.objectContaining({ status: 401 }));
    expect(() => requireRole(common, Role.admin)).toThrow(expect.objectContaining({ status: 403 }));
    expect(requireRole(admin, Role.admin)).toBe(admin);
    expect(requireRole(null, ANYONE)).toBeNull();
  });
});
