const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Event times a read counts, Unix ms: from inclusive, to exclusive. */
export interface TimeWindow {
  from: number;
  to: number;
}

/** A calendar window [start, end) in Unix ms. */
export interface Window {
  start: number;
  end: number;
}

export function utcMinute(t: number): Window {
  const start = Math.floor(t / MINUTE) * MINUTE;
  return { start, end: start + MINUTE };
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
export function offsetAt(zone: string, t: number): number {
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

/**
 * The calendar windows of a zone change only at local midnights, which fall on UTC quarter hours:
 * a window found once serves every instant of its quarter hour.
 */
const zonedCache = new Map<string, Window>();

/** Local calendar bounds (UTC-labelled local midnights) of the window of this kind holding local midnight `localDay`. */
type LocalBounds = (localDay: number) => [number, number];

const DAY_BOUNDS: LocalBounds = (localDay) => [localDay, localDay + DAY];

/** ISO weeks: Monday 00:00 to the next Monday 00:00. */
const WEEK_BOUNDS: LocalBounds = (localDay) => {
  const monday = localDay - ((new Date(localDay).getUTCDay() + 6) % 7) * DAY;
  return [monday, monday + 7 * DAY];
};

/** Calendar months: the 1st 00:00 to the next month's 1st 00:00 (28 to 31 days). */
const MONTH_BOUNDS: LocalBounds = (localDay) => {
  const d = new Date(localDay);
  return [Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)];
};

function zoned(kind: string, bounds: LocalBounds, t: number, zone: string): Window {
  if (zone === 'UTC') {
    const [start, end] = bounds(Math.floor(t / DAY) * DAY);
    return { start, end };
  }
  const key = `${kind}\u0000${zone}\u0000${Math.floor(t / (15 * MINUTE))}`;
  const cached = zonedCache.get(key);
  if (cached && t >= cached.start && t < cached.end) return cached;
  const [start, end] = bounds(Math.floor((t + offsetAt(zone, t)) / DAY) * DAY);
  const window = { start: localMidnightToInstant(zone, start), end: localMidnightToInstant(zone, end) };
  if (zonedCache.size > 100_000) zonedCache.clear();
  zonedCache.set(key, window);
  return window;
}

/** The calendar day in IANA `zone` that holds instant t (23 or 25 hours across a DST change). */
export function zonedDay(t: number, zone: string): Window {
  return zoned('d', DAY_BOUNDS, t, zone);
}

/** The ISO week (from Monday 00:00) in IANA `zone` that holds instant t. */
export function zonedWeek(t: number, zone: string): Window {
  return zoned('w', WEEK_BOUNDS, t, zone);
}

/** The calendar month in IANA `zone` that holds instant t. */
export function zonedMonth(t: number, zone: string): Window {
  return zoned('m', MONTH_BOUNDS, t, zone);
}

/** Where a `total` window ends: never, in practice (2300-01-01). Shown as no end (null). */
export const TOTAL_END = Date.UTC(2300, 0, 1);

/** The longest a calendar window lasts: a month of 31 days and a DST hour. */
export const LONGEST_WINDOW_MS = 31 * DAY + HOUR;
