import { describe, expect, it } from 'vitest';
import { assertMayGrant, mayManageUser, requireRole } from './permissions.ts';

const root = { id: 1, role: 100 };
const admin = { id: 2, role: 10 };
const common = { id: 3, role: 1 };

describe('role rules', () => {
  it('lets a role manage only users below it, and root edit root', () => {
    expect(mayManageUser(admin, { id: 9, role: 1 }, 'edit')).toBe(true);
    expect(mayManageUser(admin, { id: 9, role: 10 }, 'edit')).toBe(false);
    expect(mayManageUser(admin, { id: 1, role: 100 }, 'see')).toBe(false);
    expect(mayManageUser(root, { id: 9, role: 10 }, 'delete')).toBe(true);
    expect(mayManageUser(root, { id: 1, role: 100 }, 'edit')).toBe(true);
    expect(mayManageUser(root, { id: 7, role: 100 }, 'delete')).toBe(false);
    expect(mayManageUser(admin, { id: 2, role: 10 }, 'see')).toBe(true);
  });

  it('refuses to grant a role equal to or above the granter', () => {
    expect(() => assertMayGrant(admin, 1)).not.toThrow();
    expect(() => assertMayGrant(admin, 10)).toThrow(/role 10/);
    expect(() => assertMayGrant(root, 10)).not.toThrow();
    expect(() => assertMayGrant(root, 100)).toThrow();
  });

  it('answers 401 to nobody and 403 to a role too low', () => {
    expect(() => requireRole(null, 10)).toThrow(expect.objectContaining({ status: 401 }));
    expect(() => requireRole(common, 10)).toThrow(expect.objectContaining({ status: 403 }));
    expect(requireRole(admin, 10)).toBe(admin);
    expect(requireRole(null, 0)).toBeNull();
  });
});
