import { formatAmount, formatCount, formatShare } from '../format';
import { href } from '../router';
import type { SpendRow } from '../types';
import { TableHead } from './table-head';

/** Rows of a spend breakdown, largest first, each with a bar for its share of the range's spend. */
export function Breakdown({ rows, link }: { rows: SpendRow[]; link?: string }) {
  return (
    <table class="breakdown">
      <TableHead columns={['Name', { label: 'Spend', num: true }, { label: 'Payments', num: true }, { label: 'Share', class: 'share-col' }]} />
      <tbody>
        {rows.map((row) => (
          <tr key={row.key}>
            <td class="key" title={row.key}>
              {link ? <a href={href(link, row.key)}>{row.key}</a> : row.key}
            </td>
            <td class="num">{formatAmount(row.spend)}</td>
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
