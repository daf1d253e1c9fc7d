/**
 * Agents: a searchable list (id or name prefix, as the API's q) with spend, transactions and last
 * activity; an agent's page with its all-time figures apart from the range's (totals, spend over
 * time, endpoints: what the range bar governs), and its alerts.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type Page } from '../api';
import { ALL_TIME, useAssets, useTeamAssets } from '../assets';
import { AlertTable } from '../components/alerts';
import { Figure } from '../components/figure';
import { Money } from '../components/money';
import { Time } from '../components/time';
import { TableHead } from '../components/table-head';
import { PagedList } from '../components/list';
import { Panel, useLoad } from '../components/panel';
import { RangeBar, useRangeState, useRefreshTick } from '../components/range-bar';
import { formatCount } from '../format';
import { href, navigate, useLocation } from '../router';
import type { Agent, Alert } from '../types';
import { BreakdownPanel, RangeTotals, SpendOverTime } from './overview';

export function Agents() {
  const location = useLocation();
  const tick = useRefreshTick();
  // The list's spend is all-time: in the team's assets of all time.
  const assets = useTeamAssets();
  const q = new URLSearchParams(location.search).get('q') ?? '';
  const [text, setText] = useState(q);
  useEffect(() => setText(q), [q]);
  // The search follows typing, a moment after the last key, and lives in the URL.
  useEffect(() => {
    if (text === q) return;
    const timer = setTimeout(() => navigate(`/dashboard/agents${text ? `?q=${encodeURIComponent(text)}` : ''}`, { replace: true }), 250);
    return () => clearTimeout(timer);
  }, [text]);
  return (
    <>
      <div class="page-head">
        <h1>Agents</h1>
        <form role="search" onSubmit={(e) => e.preventDefault()}>
          <label>
            <span class="sr-only">Search agents</span>
            <input type="search" placeholder="Search by id or name" value={text} onInput={(e) => setText(e.currentTarget.value)} />
          </label>
        </form>
      </div>
      <PagedList<Agent> id="agents-list" title="Agents, latest activity first" path="/agents" query={{ q }} tick={tick} empty={q ? 'No agent matches.' : 'No agents yet: they appear with their first record.'}>
        {(agents) => (
          <table class="rows-table">
            <TableHead columns={['Agent', { label: 'Spend, all time', num: true }, { label: 'Payments', num: true }, 'Last active', 'Status']} />
            <tbody>
              {agents.map((a) => (
                <tr key={a.agentId} data-agent={a.agentId}>
                  <td class="row-main">
                    <a href={href('agents', a.agentId)}>{a.agentId}</a>
                    {a.name && a.name !== a.agentId && <div class="muted">{a.name}</div>}
                  </td>
                  <td class="num" data-label="Spend, all time">
                    <Money value={a.totalSpend} denomination={assets} />
                  </td>
                  <td class="num" data-label="Payments">
                    {formatCount(a.transactionCount)}
                  </td>
                  <td data-label="Last active">
                    <Time iso={a.lastActive} empty="never" />
                  </td>
                  <td data-label="Status">
                    <span class={`badge status-${a.status}`}>{a.status}</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </PagedList>
    </>
  );
}

export function AgentPage({ agentId }: { agentId: string }) {
  const { choice, range, setChoice, timeZone, tick } = useRangeState();
  const agent = useLoad((signal) => api<Agent>('GET', `/agents/${encodeURIComponent(agentId)}`, { signal }), [agentId], tick);
  const alerts = useLoad((signal) => api<Page<Alert>>('GET', '/alerts', { query: { agent: agentId, limit: 20 }, signal }), [agentId], tick);
  // Its all-time spend and its spend in the range may be in different assets: each asks for its own.
  const allTime = useAssets({ ...ALL_TIME, agent: agentId }, tick);
  const inRange = { from: range.from, to: range.to, agent: agentId };
  const rangeAssets = useAssets(inRange, tick);
  return (
    <>
      <p class="crumbs">
        <a href={href('agents')}>Agents</a> /
      </p>
      <div class="page-head">
        <h1>{agentId}</h1>
      </div>
      <Panel id="agent" title="All time" load={agent}>
        {(a) => (
          <dl class="figures">
            <Figure name="Total spend" value={<Money value={a.totalSpend} denomination={allTime.denomination} />} field="totalSpend" />
            <Figure name="Payments" value={formatCount(a.transactionCount)} field="transactionCount" />
            <Figure small name="Last active" value={<Time iso={a.lastActive} empty="never" />} />
            <Figure small name="Known since" value={<Time iso={a.createdAt} />} />
            <Figure small name="Name" value={a.name} />
            <Figure small name="Status" value={<span class={`badge status-${a.status}`}>{a.status}</span>} />
            <Figure small name="Authorized by" value={a.authorizedBy ?? '–'} />
          </dl>
        )}
      </Panel>
      <section class="range-section" aria-labelledby="range-section-title">
        <header class="range-head">
          <h2 id="range-section-title">In the range</h2>
          <RangeBar choice={choice} range={range} onChoice={setChoice} />
        </header>
        <RangeTotals id="agent-range" title="Totals in the range" query={inRange} tick={tick} assets={rangeAssets} />
        <SpendOverTime range={range} timeZone={timeZone} tick={tick} agent={agentId} denomination={rangeAssets.denomination} />
        <BreakdownPanel id="agent-endpoints" title="Endpoints in the range" path="/analytics/by-endpoint" query={{ ...inRange, level: 'url' }} tick={tick} denomination={rangeAssets.denomination} />
      </section>
      <Panel id="agent-alerts" title="Alerts, all time, latest raised first" load={alerts} isEmpty={(p) => p.data.length === 0} empty="No alerts for this agent.">
        {(page) => <AlertTable alerts={page.data} hideAgent more={page.next_cursor ? `/dashboard/alerts?agent=${encodeURIComponent(agentId)}` : undefined} />}
      </Panel>
    </>
  );
}
