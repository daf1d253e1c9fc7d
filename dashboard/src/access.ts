/**
 * What the signed-in key may do. GET requests need `read`, changes `admin`, answering a pending
 * authorization `approve` or `admin` (src/http/routes.ts). A control of the older pages that the
 * key may not use is shown disabled with the reason; the newer ones (approve and deny, the audit
 * log) are not shown at all. Either way, never refused after a click.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { KeyAccess, Scope } from './session';

export const AccessContext = createContext<KeyAccess | undefined>(undefined);

export interface ChangeRight {
  allowed: boolean;
  /** Why not, for a disabled control's title and the panel's note. */
  reason: string;
}

export function useChangeRight(): ChangeRight {
  const access = useContext(AccessContext);
  if (!access) return { allowed: false, reason: 'Checking what this key may change…' };
  if (access.scopes.includes('admin')) return { allowed: true, reason: '' };
  return { allowed: false, reason: `Changes need an admin key: the key “${access.name}” has ${access.scopes.join(', ') || 'no scopes'}.` };
}

/** Whether the key has one of these scopes; false while GET /team has not told (nothing is offered early). */
export function keyHasScope(access: KeyAccess | undefined, ...scopes: Scope[]): boolean {
  return Boolean(access && scopes.some((s) => access.scopes.includes(s)));
}

/** May approve or deny a pending authorization: `approve` or `admin`. */
export function useMayApprove(): boolean {
  return keyHasScope(useContext(AccessContext), 'approve', 'admin');
}

/** May read the management audit log: `admin` only. */
export function useMayReadAuditLog(): boolean {
  return keyHasScope(useContext(AccessContext), 'admin');
}

export function useAccess(): KeyAccess | undefined {
  return useContext(AccessContext);
}
