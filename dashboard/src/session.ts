/**
 * The signed-in key. It lives in this tab's sessionStorage only: never in a URL (URLs end up in
 * logs, history and Referer headers) and never in a cookie (a cookie would be sent by the browser
 * on its own, which invites cross-site request forgery). Closing the tab or signing out forgets it.
 */
const KEY = 'spendscope.apiKey';
const TEAM = 'spendscope.team';

export interface Session {
  apiKey: string;
  teamName: string;
}

export function currentSession(): Session | undefined {
  const apiKey = sessionStorage.getItem(KEY);
  if (!apiKey) return undefined;
  return { apiKey, teamName: sessionStorage.getItem(TEAM) ?? '' };
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, session.apiKey);
  sessionStorage.setItem(TEAM, session.teamName);
}

export function forgetSession(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(TEAM);
}
