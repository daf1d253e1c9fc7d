import type { ComponentChildren } from 'preact';
import { formatCount, formatShare } from '../format';
import { UNKNOWN, type Denomination } from '../money';
import { href } from '../router';
import type { SpendRow } from '../types';
import { Money } from './money';
import { TableHead } from './table-head';

/**
 * Rows of a spend breakdown, largest first, each with a bar for its share of the range's spend.
 * `denomination` is what every row's spend is in (the range's assets); `label` writes a key for
 * people (a network's name).
 */
export function Breakdown({
  rows,
  link,
  denomination = UNKNOWN,
  label,
}: {
  rows: SpendRow[];
  link?: string;
  denomination?: Denomination;
  label?: (key: string) => ComponentChildren;
}) {
  return (
    <table class="breakdown">
      <TableHead columns={['Name', { label: 'Spend', num: true }, { label: 'Payments', num: true }, { label: 'Share', class: 'share-col' }]} />
      <tbody>
        {rows.map((row) => (
          <tr key={row.key}>
            <td class="key" title={row.key}>
              {link ? <a href={href(link, row.key)}>{row.key}</a> : label ? label(row.key) : row.key}
            </td>
            <td class="num">
              <Money value={row.spend} denomination={denomination} />
            </td>
            <td class="num">{formatCount(row.count)}</td>
            <td class="share-col">
              <span class="bar" style={{ width: `${Math.max(1, row.share * 100)}%` }} aria-hidden="true" />
              <span class="share">{formatShare(row.share)}</span>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
