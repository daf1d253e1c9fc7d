/**
 * What the signed-in key may change. GET requests need `read`, changes `admin`
 * (src/http/routes.ts); a control the key may not use is shown disabled with this reason, never
 * refused after a click.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { KeyAccess } from './session';

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
