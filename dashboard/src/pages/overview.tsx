/**
 * The overview: the range's totals against the previous period, spend over time, the top agents,
 * endpoints, categories and networks, and the open alerts. Each panel is its own request, sent at
 * once, so the slowest one never holds the others back; all refresh every 10 s while visible.
 * What the range's amounts are in (its assets) is one more request, shared by the panels.
 */
import { useState } from 'preact/hooks';
import { api, type Page } from '../api';
import { useAssets } from '../assets';
import { SpendChart, type Bucket } from '../components/chart';
import { Panel, useLoad } from '../components/panel';
import { AlertTable } from '../components/alerts';
import { Breakdown } from '../components/breakdown';
import { Figure } from '../components/figure';
import { Money } from '../components/money';
import { Network } from '../components/network';
import { RangeBar, useRangeState } from '../components/range-bar';
import { formatChange, formatCount } from '../format';
import { assetName, denominationOf, inCurrency, type Denomination } from '../money';
import { granularityFor, type Range } from '../range';
import type { Alert, SpendRow, Summary } from '../types';

export function Overview() {
  const { choice, range, setChoice, timeZone, tick } = useRangeState();
  const query = { from: range.from, to: range.to };
  const assets = useAssets(query, tick);
  return (
    <>
      <div class="page-head">
        <h1>Overview</h1>
        <RangeBar choice={choice} range={range} onChoice={setChoice} />
      </div>
      <RangeTotals id="totals" title="Totals" query={query} tick={tick} assets={assets} />
      <SpendOverTime range={range} timeZone={timeZone} tick={tick} denomination={assets.denomination} />
      <div class="grid two">
        <BreakdownPanel id="agents" title="Top agents" path="/analytics/by-agent" query={query} tick={tick} link="agents" denomination={assets.denomination} />
        <EndpointsPanel query={query} tick={tick} denomination={assets.denomination} />
        <BreakdownPanel id="categories" title="Categories" path="/analytics/by-category" query={query} tick={tick} denomination={assets.denomination} />
        <NetworksPanel query={query} tick={tick} denomination={assets.denomination} />
      </div>
      <OpenAlerts tick={tick} />
    </>
  );
}

/** The range's figures (of one agent with `agent`), each amount with what it is in. */
export function RangeTotals({
  id,
  title,
  query,
  tick,
  assets,
}: {
  id: string;
  title: string;
  query: { from: number; to: number; agent?: string };
  tick: number;
  assets: { denomination: Denomination; rows: SpendRow[] };
}) {
  const load = useLoad((signal) => api<Summary>('GET', '/analytics/summary', { query: { ...query, limit: 1 }, signal }), [query], tick);
  const d = assets.denomination;
  return (
    <Panel id={id} title={title} load={load} class="totals">
      {(s) => (
        <>
          <dl class="figures">
            <Figure
              name="Total value"
              value={<Money value={s.totalValue} denomination={inCurrency(s.currency)} />}
              note={s.unvalued > 0 ? `${formatCount(s.unvalued)} unvalued (no rate): not in it` : formatChange(s.change.value)}
              field="totalValue"
            />
            <Figure name="Total spend" value={<Money value={s.totalSpend} denomination={d} />} note={formatChange(s.change.spend)} field="totalSpend" />
            <Figure name="Payments" value={formatCount(s.count)} note={formatChange(s.change.count)} field="count" />
            <Figure name="Average payment" value={<Money value={s.avgPayment} denomination={d} />} field="avgPayment" />
            <Figure name="Largest payment" value={<Money value={s.maxPayment} denomination={d} />} field="maxPayment" />
            {query.agent === undefined && <Figure name="Active agents" value={formatCount(s.activeAgents)} field="activeAgents" />}
            {/* The records' own policy_evaluation, as the client sent it: not this service's policies. */}
            <Figure name="Flagged" value={formatCount(s.flagged)} note="as the client reported" field="flagged" />
            <Figure name="Blocked" value={formatCount(s.blocked)} note="as the client reported" field="blocked" />
            <Figure
              name="Previous period"
              value={<Money value={s.previous.totalSpend} denomination={d} />}
              note={`${formatCount(s.previous.count)} payments`}
              field="previousSpend"
            />
          </dl>
          {d.kind === 'mixed' && <AssetSplit rows={assets.rows} />}
        </>
      )}
    </Panel>
  );
}

/** When a range holds several assets, its spend in each: the totals above add them as they are. */
function AssetSplit({ rows }: { rows: SpendRow[] }) {
  return (
    <p class="asset-split" data-asset-split>
      <span class="muted">These totals add amounts of {rows.length} assets as they are (not converted). By asset: </span>
      {rows.map((r, i) => (
        <span key={r.key}>
          {i > 0 && ' · '}
          <Money value={r.spend} denomination={denominationOf([r.key])} />
          {r.key === '' && ` (${assetName(r.key)})`}
        </span>
      ))}
    </p>
  );
}

export function SpendOverTime({ range, timeZone, tick, agent, denomination }: { range: Range; timeZone: string; tick: number; agent?: string; denomination?: Denomination }) {
  const granularity = granularityFor(range);
  const load = useLoad(
    (signal) => api<Bucket[]>('GET', '/analytics/timeseries', { query: { from: range.from, to: range.to, granularity, tz: timeZone, agent }, signal }),
    [range.from, range.to, granularity, timeZone, agent],
    tick,
  );
  return (
    <Panel id="timeseries" title={`Spend over time, by ${granularity}`} load={load} isEmpty={(b) => b.length === 0}>
      {(buckets) => <SpendChart buckets={buckets} timeZone={timeZone} denomination={denomination} />}
    </Panel>
  );
}

interface BreakdownPanelProps {
  id: string;
  title: string;
  path: string;
  query: Record<string, string | number | undefined>;
  tick: number;
  link?: string;
  denomination?: Denomination;
}

export function BreakdownPanel({ id, title, path, query, tick, link, denomination }: BreakdownPanelProps) {
  const load = useLoad((signal) => api<SpendRow[]>('GET', path, { query: { ...query, limit: 10 }, signal }), [path, query], tick);
  return (
    <Panel id={id} title={title} load={load} isEmpty={(rows) => rows.length === 0}>
      {(rows) => <Breakdown rows={rows} link={link} denomination={denomination} />}
    </Panel>
  );
}

/** Networks by name, the CAIP-2 id beside it. */
function NetworksPanel({ query, tick, denomination }: { query: Record<string, string | number | undefined>; tick: number; denomination: Denomination }) {
  const load = useLoad((signal) => api<SpendRow[]>('GET', '/analytics/by-network', { query: { ...query, limit: 10 }, signal }), [query], tick);
  return (
    <Panel id="networks" title="Networks" load={load} isEmpty={(rows) => rows.length === 0}>
      {(rows) => <Breakdown rows={rows} denomination={denomination} label={(key) => <Network id={key} />} />}
    </Panel>
  );
}

export function EndpointsPanel({ query, tick, denomination }: { query: Record<string, string | number | undefined>; tick: number; denomination?: Denomination }) {
  const [level, setLevel] = useState<'domain' | 'url'>('domain');
  const load = useLoad(
    (signal) => api<SpendRow[]>('GET', '/analytics/by-endpoint', { query: { ...query, limit: 10, level: level === 'url' ? 'url' : undefined }, signal }),
    [query, level],
    tick,
  );
  return (
    <Panel
      id="endpoints"
      title="Top endpoints"
      load={load}
      isEmpty={(rows) => rows.length === 0}
      actions={
        <div class="toggle" role="group" aria-label="Endpoints by">
          <button type="button" aria-pressed={level === 'domain'} onClick={() => setLevel('domain')}>
            Domain
          </button>
          <button type="button" aria-pressed={level === 'url'} onClick={() => setLevel('url')}>
            URL
          </button>
        </div>
      }
    >
      {(rows) => <Breakdown rows={rows} denomination={denomination} />}
    </Panel>
  );
}

function OpenAlerts({ tick }: { tick: number }) {
  const load = useLoad((signal) => api<Page<Alert>>('GET', '/alerts', { query: { status: 'open', limit: 10 }, signal }), [], tick);
  return (
    <Panel id="open-alerts" title="Open alerts, latest raised first" load={load} isEmpty={(page) => page.data.length === 0} empty="No open alerts.">
      {(page) => <AlertTable alerts={page.data} more={page.next_cursor ? '/dashboard/alerts?status=open' : undefined} />}
    </Panel>
  );
}
