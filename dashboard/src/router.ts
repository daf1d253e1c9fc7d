/**
 * A small history router: the dashboard's pages are paths under /dashboard/ (the service answers
 * each with the same page), so links can be opened in a new tab, bookmarked and reloaded.
 */
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/dashboard';

export interface Location {
  /** The path below /dashboard, without a trailing slash: '' for the overview, 'agents/a-1', … */
  path: string;
  search: string;
}

function current(): Location {
  let path = window.location.pathname;
  if (path.startsWith(BASE)) path = path.slice(BASE.length);
  return { path: path.replace(/^\/+|\/+$/g, ''), search: window.location.search };
}

const listeners = new Set<() => void>();

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = to.startsWith('/') ? to : `${BASE}/${to}`;
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const listener of listeners) listener();
  if (!options.replace) window.scrollTo(0, 0);
}

/** Href for a page of the dashboard: href('agents', 'a-1') -> /dashboard/agents/a-1 (parts escaped). */
export function href(...parts: string[]): string {
  return `${BASE}/${parts.map(encodeURIComponent).join('/')}`;
}

export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = () => setLocation(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return location;
}

/** Same-origin links below /dashboard are followed without a page load (modifier keys still open tabs). */
export function interceptLinks(): void {
  document.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const anchor = (event.target as Element | null)?.closest?.('a');
    if (!anchor || anchor.target || anchor.hasAttribute('download')) return;
    const url = new URL(anchor.href, window.location.href);
    if (url.origin !== window.location.origin || !url.pathname.startsWith(BASE)) return;
    event.preventDefault();
    navigate(url.pathname + url.search);
  });
}

/** The page's query with one parameter set (or removed when empty), in place of the current entry. */
export function replaceParam(name: string, value: string | undefined): void {
  const { path, search } = current();
  const params = new URLSearchParams(search);
  if (value) params.set(name, value);
  else params.delete(name);
  const text = params.toString();
  navigate(`${BASE}/${path}${text ? `?${text}` : ''}`, { replace: true });
}
