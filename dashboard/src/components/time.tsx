import { formatClock, formatInstant, formatWhen, sameDay } from '../time';
import { useTimeZone } from '../zone';

/**
 * An instant in the chosen zone: "12 min ago" within the last day (unless `absolute`), else
 * "24 Nov 2026, 05:59"; the full date, time and zone in the tooltip.
 */
export function Time({ iso, absolute, empty = '–' }: { iso: string | null | undefined; absolute?: boolean; empty?: string }) {
  const zone = useTimeZone();
  if (!iso) return <span class="time-empty">{empty}</span>;
  const ms = Date.parse(iso);
  return (
    <time dateTime={iso} title={Number.isNaN(ms) ? iso : `${formatInstant(ms, zone)} (${zone})`}>
      {formatWhen(iso, zone, { relative: !absolute })}
    </time>
  );
}

/**
 * A window: "23 Nov 2026, 05:00 – 06:00" on one day, else both in full; with no end (a `total`
 * limit counts from its start on), "since 23 Nov 2026, 05:00".
 */
export function TimeWindow({ start, end }: { start: string; end: string | null }) {
  const zone = useTimeZone();
  const from = Date.parse(start);
  if (end === null) {
    return (
      <span class="window" title={`since ${formatInstant(from, zone)} (${zone}), with no end`}>
        since <time dateTime={start}>{formatInstant(from, zone)}</time>
      </span>
    );
  }
  const to = Date.parse(end);
  const title = `${formatInstant(from, zone)} to ${formatInstant(to, zone)} (${zone}), end excluded`;
  return (
    <span class="window" title={title}>
      <time dateTime={start}>{formatInstant(from, zone)}</time> –{' '}
      <time dateTime={end}>{sameDay(from, to, zone) ? formatClock(to, zone) : formatInstant(to, zone)}</time>
    </span>
  );
}
