/**
 * The signed-in key. It lives in this tab's sessionStorage only: never in a URL (URLs end up in
 * logs, history and Referer headers) and never in a cookie (a cookie would be sent by the browser
 * on its own, which invites cross-site request forgery). Closing the tab or signing out forgets it.
 * Beside it, what GET /team said of it (its name and scopes), so the pages know at once which
 * changes it may make.
 */
const KEY = 'spendscope.apiKey';
const TEAM = 'spendscope.team';
const ACCESS = 'spendscope.access';

/** As src/teams/repository.ts: `approve` answers authorizations a policy holds for a person. */
export type Scope = 'ingest' | 'read' | 'approve' | 'admin';

export interface KeyAccess {
  id: string;
  name: string;
  scopes: Scope[];
}

export interface Session {
  apiKey: string;
  teamName: string;
  /** Undefined until GET /team has told (a session from before it did). */
  access?: KeyAccess;
}

export function currentSession(): Session | undefined {
  const apiKey = sessionStorage.getItem(KEY);
  if (!apiKey) return undefined;
  let access: KeyAccess | undefined;
  try {
    access = JSON.parse(sessionStorage.getItem(ACCESS) ?? 'null') ?? undefined;
  } catch {
    access = undefined;
  }
  return { apiKey, teamName: sessionStorage.getItem(TEAM) ?? '', access };
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, session.apiKey);
  sessionStorage.setItem(TEAM, session.teamName);
  if (session.access) sessionStorage.setItem(ACCESS, JSON.stringify(session.access));
}

export function forgetSession(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(TEAM);
  sessionStorage.removeItem(ACCESS);
}
