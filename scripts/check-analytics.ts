/**
 * npm run check:analytics -- --data-dir DIR
 *
 * The analytics of a seeded store against a raw recomputation from its events, for the team with
 * the most events, over the full range, the last day and a ragged 40-day range: every breakdown
 * row of four dimensions, the summary's totals, every day of the time series. Exits 1 on the first
 * difference. Run while the server is stopped (one process at a time).
 */
import assert from 'node:assert';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { breakdownReport, summaryReport, timeseriesReport } from '../src/analytics/reports.js';
import type { Dimension, TimeRange } from '../src/analytics/queries.js';
import { loadConfig } from '../src/config.js';
import { openStores } from '../src/stores/open.js';

const DAY = 86_400_000;
/** A Decimal's text as the reports give it: no trailing zeros. */
const plain = (decimal: string) => decimal.replace(/\.?0+$/, '') || '0';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'data-dir': { type: 'string' } } });
  const dataDir = path.resolve(values['data-dir'] ?? loadConfig().dataDir);
  const stores = await openStores(loadConfig({ ...process.env, DATA_DIR: dataDir }), pino({ level: 'warn' }));
  const events = stores.events;
  try {
    const [top] = await events.query<{ team_id: string; first: string; n: string }>(
      'SELECT team_id, toUnixTimestamp64Milli(min(event_time)) AS first, count() AS n FROM events GROUP BY team_id ORDER BY n DESC LIMIT 1',
    );
    if (!top) throw new Error(`no events in ${dataDir}`);
    const team = top.team_id;
    const now = Date.now();
    const ranges: TimeRange[] = [
      { from: Number(top.first), to: now },
      { from: now - DAY, to: now },
      { from: now - 40 * DAY + 1_234, to: now - 5 * 3_600_000 - 777 },
    ];
    let rows = 0;
    for (const range of ranges) {
      const where = 'team_id = {t:String} AND event_time >= fromUnixTimestamp64Milli({f:Int64}) AND event_time < fromUnixTimestamp64Milli({to:Int64})';
      const params = { t: team, f: range.from, to: range.to };
      const dimensions: [Dimension, string][] = [['agent', 'agent_id'], ['url', 'endpoint'], ['network', 'toString(network)'], ['category', 'toString(category)']];
      for (const [dimension, column] of dimensions) {
        const raw = await events.query<{ key: string; spend: string; n: string; value: string }>(
          `SELECT ${column} AS key, toString(sum(toDecimal256(amount, 18))) AS spend, count() AS n,
                  toString(sum(if(currency = 'USD', toDecimal256(ifNull(value, 0), 18), toDecimal256(0, 18)))) AS value
             FROM events WHERE ${where} GROUP BY key ORDER BY key`,
          params,
        );
        const answer = await breakdownReport(events, team, range, dimension, 1_000, undefined, 'USD');
        const wanted = raw.map((r) => ({ key: dimension === 'network' && r.key === '' ? 'unknown' : r.key, spend: plain(r.spend), count: Number(r.n), value: plain(r.value) }));
        const got = answer.map((r) => ({ key: r.key, spend: r.spend, count: r.count, value: r.value }));
        const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
        assert.deepStrictEqual(got.sort(byKey), wanted.sort(byKey), `by ${dimension} over ${JSON.stringify(range)}`);
        rows += got.length;
      }
      const [total] = await events.query<{ spend: string; n: string; max: string }>(
        `SELECT toString(sum(toDecimal256(amount, 18))) AS spend, count() AS n, toString(max(amount)) AS max FROM events WHERE ${where}`,
        params,
      );
      const summary = await summaryReport(events, team, range, 10, undefined, 'USD');
      assert.deepStrictEqual([summary.totalSpend, summary.count, summary.maxPayment], [plain(total!.spend), Number(total!.n), plain(total!.max)], `summary over ${JSON.stringify(range)}`);
      const days = await events.query<{ b: string; spend: string; n: string }>(
        `SELECT toUnixTimestamp(toStartOfDay(toDateTime(event_time, 'UTC'))) * 1000 AS b, toString(sum(toDecimal256(amount, 18))) AS spend, count() AS n
           FROM events WHERE ${where} GROUP BY b ORDER BY b`,
        params,
      );
      const series = await timeseriesReport(events, team, range, 'day', 'UTC', undefined, 'USD');
      assert.deepStrictEqual(
        series.filter((b) => b.count > 0).map((b) => [Date.parse(b.t), b.spend, b.count]),
        days.map((d) => [Number(d.b), plain(d.spend), Number(d.n)]),
        `timeseries over ${JSON.stringify(range)}`,
      );
      rows += series.length + 1;
      console.log(`${new Date(range.from).toISOString()} .. ${new Date(range.to).toISOString()}: equal`);
    }
    console.log(`${Number(top.n).toLocaleString('en-US')} events of the team: ${rows} rows, totals and buckets equal to the raw recomputation`);
  } finally {
    stores.registry.close();
    await events.close();
    await stores.loaderEvents.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
