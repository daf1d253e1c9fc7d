/**
 * Time for display: one format, "24 Nov 2026, 05:59", always in the zone the person chose (see
 * zone.ts), and "12 min ago" for the last day, where a relative time reads faster. Parts of the
 * same format serve where less is needed ("24 Nov", "05:59": chart ticks, a window's end on the
 * same day). Built from formatToParts so the format is ours, not the locale's.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function partsOf(ms: number, zone: string): Record<'year' | 'month' | 'day' | 'hour' | 'minute', string> {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-GB', { timeZone: zone, year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formatters.set(zone, formatter);
  }
  const parts: Record<string, string> = {};
  for (const p of formatter.formatToParts(new Date(ms))) parts[p.type] = p.value;
  return parts as Record<'year' | 'month' | 'day' | 'hour' | 'minute', string>;
}

/** "24 Nov" */
export function formatDay(ms: number, zone: string): string {
  const p = partsOf(ms, zone);
  return `${p.day} ${p.month}`;
}

/** "05:59" */
export function formatClock(ms: number, zone: string): string {
  const p = partsOf(ms, zone);
  return `${p.hour}:${p.minute}`;
}

/** "24 Nov 2026, 05:59": the one format of an instant. */
export function formatInstant(ms: number, zone: string): string {
  const p = partsOf(ms, zone);
  return `${p.day} ${p.month} ${p.year}, ${p.hour}:${p.minute}`;
}

/** Whether two instants fall on the same calendar day in the zone. */
export function sameDay(a: number, b: number, zone: string): boolean {
  const pa = partsOf(a, zone);
  const pb = partsOf(b, zone);
  return pa.year === pb.year && pa.month === pb.month && pa.day === pb.day;
}

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** Up to this age a time reads as "… ago"; older ones (and future ones) as the date. */
export const RECENT_MS = 24 * HOUR;

/** "just now", "12 min ago", "5 h ago" for an instant of the last day; undefined otherwise. */
export function formatRelative(ms: number, now: number): string | undefined {
  const age = now - ms;
  // A minute of clock skew between the service and the browser still reads "just now".
  if (age < -MINUTE || age >= RECENT_MS) return undefined;
  if (age < MINUTE) return 'just now';
  if (age < HOUR) return `${Math.floor(age / MINUTE)} min ago`;
  return `${Math.floor(age / HOUR)} h ago`;
}

/** An instant as shown: relative when recent (if asked), else the one format. */
export function formatWhen(iso: string, zone: string, { relative = true, now = Date.now() } = {}): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return (relative && formatRelative(ms, now)) || formatInstant(ms, zone);
}

/** ISO 8601 date-times inside a text (an alert's explanation), to be written in the one format. */
export const ISO_IN_TEXT = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})/g;

/** The text with each ISO date-time in it written in the one format, in the zone. */
export function rewriteTimes(text: string, zone: string): string {
  return text.replace(ISO_IN_TEXT, (iso) => formatInstant(Date.parse(iso), zone));
}

const numericFormatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's wall clock at an instant, as if it were UTC (whole minutes). */
function wallClockOf(ms: number, zone: string): number {
  let formatter = numericFormatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', hourCycle: 'h23' });
    numericFormatters.set(zone, formatter);
  }
  const p: Record<string, number> = {};
  for (const part of formatter.formatToParts(new Date(ms))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!);
}

/**
 * A time typed into a datetime-local input ("2026-11-24T05:59"), read in the dashboard's zone (not
 * the browser's): the instant, or undefined when it is not a time. A wall time a clock change skips
 * reads as the instant after the change.
 */
export function zonedInputToMs(value: string, zone: string): number | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(value);
  if (!match) return undefined;
  const wall = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]), Number(match[4]), Number(match[5]));
  const minute = (ms: number) => Math.floor(ms / 60_000) * 60_000;
  // The zone's offset at a first guess, then at the instant that guess gives (a clock change between them).
  let instant = wall - (wallClockOf(wall, zone) - minute(wall));
  instant = wall - (wallClockOf(instant, zone) - minute(instant));
  return instant;
}

/** An instant as a datetime-local input's value, in the dashboard's zone. */
export function msToZonedInput(ms: number, zone: string): string {
  return new Date(wallClockOf(ms, zone)).toISOString().slice(0, 16);
}

/** A record's time as the client sent it (Unix ms, or ISO 8601) as ISO 8601; null when absent or not a time. */
export function recordTimeIso(value: number | string | null | undefined): string | null {
  if (value === null || value === undefined || value === '') return null;
  const ms = typeof value === 'number' ? value : Date.parse(value);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}
