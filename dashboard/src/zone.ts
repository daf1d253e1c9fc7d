/**
 * The time zone every time on the dashboard is written in: the browser's own unless the person
 * picks another (kept for the tab). One setting for the whole dashboard, so a chart, an alert's
 * window and a list's "last seen" never disagree.
 */
import { useEffect, useState } from 'preact/hooks';

const KEY = 'spendscope.timeZone';
export const LOCAL_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

let zone = sessionStorage.getItem(KEY) ?? LOCAL_ZONE;
const listeners = new Set<(zone: string) => void>();

export function currentZone(): string {
  return zone;
}

export function setZone(next: string): void {
  sessionStorage.setItem(KEY, next);
  zone = next;
  for (const listener of listeners) listener(next);
}

export function useTimeZone(): string {
  const [value, setValue] = useState(zone);
  useEffect(() => {
    listeners.add(setValue);
    setValue(zone);
    return () => void listeners.delete(setValue);
  }, []);
  return value;
}

/** The zones one can pick: UTC, the browser's, then every zone the browser knows. */
export function timeZones(): string[] {
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return Array.from(new Set(['UTC', LOCAL_ZONE, ...zones]));
}
