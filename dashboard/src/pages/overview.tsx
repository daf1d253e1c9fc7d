/**
 * The overview: the range's totals against the previous period, spend over time, the top agents,
 * endpoints, categories and networks, and the open alerts. Each panel is its own request, sent at
 * once, so the slowest one never holds the others back; all refresh every 10 s while visible.
 */
import { useState } from 'preact/hooks';
import { api, type Page } from '../api';
import { SpendChart, type Bucket } from '../components/chart';
import { Panel, useLoad } from '../components/panel';
import { AlertList } from '../components/alerts';
import { Breakdown } from '../components/breakdown';
import { Figure } from '../components/figure';
import { RangeBar } from '../components/range-bar';
import { formatAmount, formatChange, formatCount } from '../format';
import { granularityFor, type Range } from '../range';
import type { Alert, SpendRow, Summary } from '../types';
import { useRangeState } from '../components/range-bar';

export function Overview() {
  const { choice, range, setChoice, timeZone, setTimeZone, tick } = useRangeState();
  const query = { from: range.from, to: range.to };
  return (
    <>
      <div class="page-head">
        <h1>Overview</h1>
        <RangeBar choice={choice} range={range} onChoice={setChoice} timeZone={timeZone} onTimeZone={setTimeZone} />
      </div>
      <Totals range={range} tick={tick} />
      <SpendOverTime range={range} timeZone={timeZone} tick={tick} />
      <div class="grid two">
        <BreakdownPanel id="agents" title="Top agents" path="/analytics/by-agent" query={query} tick={tick} link="agents" />
        <EndpointsPanel query={query} tick={tick} />
        <BreakdownPanel id="categories" title="Categories" path="/analytics/by-category" query={query} tick={tick} />
        <BreakdownPanel id="networks" title="Networks" path="/analytics/by-network" query={query} tick={tick} />
      </div>
      <OpenAlerts tick={tick} />
    </>
  );
}

function Totals({ range, tick }: { range: Range; tick: number }) {
  const load = useLoad((signal) => api<Summary>('GET', '/analytics/summary', { query: { from: range.from, to: range.to, limit: 1 }, signal }), [range.from, range.to], tick);
  return (
    <Panel id="totals" title="Totals" load={load} class="totals">
      {(s) => (
        <dl class="figures">
          <Figure name="Total spend" value={formatAmount(s.totalSpend)} note={formatChange(s.change.spend)} field="totalSpend" />
          <Figure name="Payments" value={formatCount(s.count)} note={formatChange(s.change.count)} field="count" />
          <Figure name="Average payment" value={formatAmount(s.avgPayment)} field="avgPayment" />
          <Figure name="Largest payment" value={formatAmount(s.maxPayment)} field="maxPayment" />
          <Figure name="Active agents" value={formatCount(s.activeAgents)} field="activeAgents" />
          <Figure name="Flagged" value={formatCount(s.flagged)} field="flagged" />
          <Figure name="Blocked" value={formatCount(s.blocked)} field="blocked" />
          <Figure name="Previous period" value={formatAmount(s.previous.totalSpend)} note={`${formatCount(s.previous.count)} payments`} field="previousSpend" />
        </dl>
      )}
    </Panel>
  );
}

export function SpendOverTime({ range, timeZone, tick, agent }: { range: Range; timeZone: string; tick: number; agent?: string }) {
  const granularity = granularityFor(range);
  const load = useLoad(
    (signal) => api<Bucket[]>('GET', '/analytics/timeseries', { query: { from: range.from, to: range.to, granularity, tz: timeZone, agent }, signal }),
    [range.from, range.to, granularity, timeZone, agent],
    tick,
  );
  return (
    <Panel id="timeseries" title={`Spend over time, by ${granularity}`} load={load} isEmpty={(b) => b.length === 0}>
      {(buckets) => <SpendChart buckets={buckets} timeZone={timeZone} />}
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
}

export function BreakdownPanel({ id, title, path, query, tick, link }: BreakdownPanelProps) {
  const load = useLoad((signal) => api<SpendRow[]>('GET', path, { query: { ...query, limit: 10 }, signal }), [path, query], tick);
  return (
    <Panel id={id} title={title} load={load} isEmpty={(rows) => rows.length === 0}>
      {(rows) => <Breakdown rows={rows} link={link} />}
    </Panel>
  );
}

export function EndpointsPanel({ query, tick }: { query: Record<string, string | number | undefined>; tick: number }) {
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
      {(rows) => <Breakdown rows={rows} />}
    </Panel>
  );
}

function OpenAlerts({ tick }: { tick: number }) {
  const load = useLoad((signal) => api<Page<Alert>>('GET', '/alerts', { query: { status: 'open', limit: 10 }, signal }), [], tick);
  return (
    <Panel id="open-alerts" title="Open alerts" load={load} isEmpty={(page) => page.data.length === 0} empty="No open alerts.">
      {(page) => <AlertList alerts={page.data} more={page.next_cursor ? '/dashboard/alerts?status=open' : undefined} />}
    </Panel>
  );
}
