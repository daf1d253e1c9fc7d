/**
 * Spend over time, drawn with uPlot (made for time series: small, fast on thousands of points).
 * The line's height needs a number, so the spend is parsed for drawing only; every figure a person
 * reads (the legend, the table under the chart) is the API's string through the one money format.
 * The legend is ours, not uPlot's: it shows the latest bucket until the cursor points at another.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatCount } from '../format';
import { UNKNOWN, type Denomination } from '../money';
import { formatClock, formatDay, formatInstant } from '../time';
import { Money } from './money';
import { TableHead } from './table-head';
import { Time } from './time';

export interface Bucket {
  t: string;
  spend: string;
  count: number;
}

export function SpendChart({
  buckets,
  timeZone,
  label = 'Spend over time',
  denomination = UNKNOWN,
}: {
  buckets: Bucket[];
  timeZone: string;
  label?: string;
  denomination?: Denomination;
}) {
  const host = useRef<HTMLDivElement>(null);
  const [hovered, setHovered] = useState<number | null>(null);
  useEffect(() => {
    const element = host.current;
    if (!element) return;
    const xs = buckets.map((b) => Date.parse(b.t) / 1000);
    // For drawing only: the height of the line.
    const ys = buckets.map((b) => Number(b.spend));
    const width = () => Math.max(240, element.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 240,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), timeZone),
        scales: { x: { time: true } },
        series: [{}, { label: 'Spend', stroke: '#2563eb', fill: 'rgba(37, 99, 235, 0.12)', width: 2, points: { show: buckets.length <= 100 } }],
        axes: [
          { values: (_u, splits) => timeTicks(splits, timeZone), space: 70 },
          { size: 70, values: (_u, splits) => splits.map((v) => formatAxis(v)) },
        ],
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        hooks: { setCursor: [(u) => setHovered(u.cursor.idx ?? null)] },
      },
      [xs, ys],
      element,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 240 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [buckets, timeZone]);
  const shown = hovered ?? buckets.length - 1;
  const point = buckets[shown];
  return (
    <figure class="chart">
      {point && (
        <p class="chart-legend" aria-live="off" data-legend={hovered === null ? 'latest' : 'hovered'}>
          <span class="muted">{hovered === null ? 'Latest bucket' : 'Bucket'}, from</span> <Time iso={point.t} absolute />
          {': '}
          <strong>
            <Money value={point.spend} denomination={denomination} />
          </strong>{' '}
          <span class="muted">
            · {formatCount(point.count)} {point.count === 1 ? 'payment' : 'payments'}
          </span>
        </p>
      )}
      <div ref={host} role="img" aria-label={`${label}: ${buckets.length} points`} data-points={buckets.length} />
      <figcaption class="sr-only">{label}</figcaption>
      <details class="chart-table">
        <summary>Table of these {formatCount(buckets.length)} points</summary>
        <table>
          <TableHead columns={['From', { label: 'Spend', num: true }, { label: 'Payments', num: true }]} />
          <tbody>
            {buckets.map((b) => (
              <tr key={b.t}>
                <td>{formatInstant(Date.parse(b.t), timeZone)}</td>
                <td class="num">
                  <Money value={b.spend} denomination={denomination} />
                </td>
                <td class="num">{formatCount(b.count)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

/**
 * Tick labels in parts of the one time format: the clock ("05:00"), with the day under it where
 * the day changes ("24 Nov"), or the day alone when every tick is a midnight.
 */
function timeTicks(splits: number[], zone: string): string[] {
  const allMidnights = splits.every((s) => formatClock(s * 1000, zone) === '00:00');
  let lastDay = '';
  return splits.map((s) => {
    const day = formatDay(s * 1000, zone);
    if (allMidnights) return day;
    const clock = formatClock(s * 1000, zone);
    const text = day !== lastDay ? `${clock}\n${day}` : clock;
    lastDay = day;
    return text;
  });
}

/** Axis ticks are positions, not amounts: rounded labels are fine there. */
function formatAxis(value: number): string {
  if (value === 0) return '0';
  if (Math.abs(value) >= 1000) return value.toLocaleString('en-US', { maximumFractionDigits: 0 });
  return value.toLocaleString('en-US', { maximumSignificantDigits: 4 });
}
