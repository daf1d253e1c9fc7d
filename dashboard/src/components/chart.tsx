/**
 * Spend over time, drawn with uPlot (made for time series: small, fast on thousands of points).
 * The line's height needs a number, so the spend is parsed for drawing only; every figure a person
 * reads (the legend as the cursor moves, the table under the chart) is the API's exact string.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatAmount, formatCount } from '../format';
import { TableHead } from './table-head';

export interface Bucket {
  t: string;
  spend: string;
  count: number;
}

export function SpendChart({ buckets, timeZone, label = 'Spend over time' }: { buckets: Bucket[]; timeZone: string; label?: string }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = host.current;
    if (!element) return;
    const xs = buckets.map((b) => Date.parse(b.t) / 1000);
    const ys = buckets.map((b) => Number(b.spend));
    const exact = (i: number | null | undefined) => (i === null || i === undefined ? '–' : formatAmount(buckets[i]?.spend));
    const width = () => Math.max(240, element.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 240,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), timeZone),
        scales: { x: { time: true } },
        series: [
          {},
          {
            label: 'Spend',
            stroke: '#2563eb',
            fill: 'rgba(37, 99, 235, 0.12)',
            width: 2,
            points: { show: buckets.length <= 100 },
            value: (_u, _v, _s, i) => exact(i),
          },
        ],
        axes: [{}, { size: 70, values: (_u, splits) => splits.map((v) => formatAxis(v)) }],
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
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
  return (
    <figure class="chart">
      <div ref={host} role="img" aria-label={`${label}: ${buckets.length} points`} data-points={buckets.length} />
      <figcaption class="sr-only">{label}</figcaption>
      <details class="chart-table">
        <summary>Table of these {formatCount(buckets.length)} points</summary>
        <table>
          <TableHead columns={['From', { label: 'Spend', num: true }, { label: 'Payments', num: true }]} />
          <tbody>
            {buckets.map((b) => (
              <tr key={b.t}>
                <td>{new Date(b.t).toLocaleString('en-GB', { timeZone })}</td>
                <td class="num">{formatAmount(b.spend)}</td>
                <td class="num">{formatCount(b.count)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

/** Axis ticks are positions, not amounts: rounded labels are fine there. */
function formatAxis(value: number): string {
  if (value === 0) return '0';
  if (Math.abs(value) >= 1000) return value.toLocaleString('en-US', { maximumFractionDigits: 0 });
  return value.toLocaleString('en-US', { maximumSignificantDigits: 4 });
}
