const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A calendar window [start, end) in Unix ms. */
export interface Window {
  start: number;
  end: number;
}

export function utcHour(t: number): Window {
  const start = Math.floor(t / HOUR) * HOUR;
  return { start, end: start + HOUR };
}

export function utcDay(t: number): Window {
  const start = Math.floor(t / DAY) * DAY;
  return { start, end: start + DAY };
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Offset of `zone` from UTC at instant t, in ms (local = t + offset). */
function offsetAt(zone: string, t: number): number {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(t)).map((p) => [p.type, p.value]));
  const local = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return local - Math.floor(t / 1000) * 1000;
}

/** The instant a local midnight (given as ms of a UTC-labelled local time) happens in `zone`. */
function localMidnightToInstant(zone: string, localMidnight: number): number {
  // Two passes settle the offset when it changes near midnight (DST).
  let instant = localMidnight - offsetAt(zone, localMidnight);
  instant = localMidnight - offsetAt(zone, instant);
  return instant;
}

// Day windows of a zone change only at local midnights, which fall on UTC quarter hours.
const dayCache = new Map<string, Window>();

/** The calendar day in IANA `zone` that holds instant t. */
export function zonedDay(t: number, zone: string): Window {
  if (zone === 'UTC') return utcDay(t);
  const key = `${zone}\u0000${Math.floor(t / (15 * MINUTE))}`;
  const cached = dayCache.get(key);
  if (cached && t >= cached.start && t < cached.end) return cached;
  const localDay = Math.floor((t + offsetAt(zone, t)) / DAY) * DAY;
  const window = { start: localMidnightToInstant(zone, localDay), end: localMidnightToInstant(zone, localDay + DAY) };
  if (dayCache.size > 100_000) dayCache.clear();
  dayCache.set(key, window);
  return window;
}
