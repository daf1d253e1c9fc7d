/**
 * Agents: a searchable list (id or name prefix, as the API's q) with spend, transactions and last
 * activity; an agent's page with its spend over time, its endpoints and its alerts.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type Page } from '../api';
import { AlertList } from '../components/alerts';
import { Figure } from '../components/figure';
import { TableHead } from '../components/table-head';
import { PagedList } from '../components/list';
import { Panel, useLoad } from '../components/panel';
import { RangeBar, useRangeState, useRefreshTick } from '../components/range-bar';
import { formatAgo, formatAmount, formatCount, formatTime } from '../format';
import { href, navigate, useLocation } from '../router';
import type { Agent, Alert } from '../types';
import { BreakdownPanel, SpendOverTime } from './overview';

export function Agents() {
  const location = useLocation();
  const tick = useRefreshTick();
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
          <div class="table-wrap">
            <table>
              <TableHead columns={['Agent', { label: 'Spend', num: true }, { label: 'Transactions', num: true }, 'Last active', { label: 'Status', class: 'wide-only' }]} />
              <tbody>
                {agents.map((a) => (
                  <tr key={a.agentId} data-agent={a.agentId}>
                    <td>
                      <a href={href('agents', a.agentId)}>{a.agentId}</a>
                      {a.name && a.name !== a.agentId && <div class="muted">{a.name}</div>}
                    </td>
                    <td class="num">{formatAmount(a.totalSpend)}</td>
                    <td class="num">{formatCount(a.transactionCount)}</td>
                    <td title={a.lastActive ?? undefined}>{formatAgo(a.lastActive)}</td>
                    <td class="wide-only">
                      <span class={`badge status-${a.status}`}>{a.status}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </PagedList>
    </>
  );
}

export function AgentPage({ agentId }: { agentId: string }) {
  const { choice, range, setChoice, timeZone, setTimeZone, tick } = useRangeState();
  const agent = useLoad((signal) => api<Agent>('GET', `/agents/${encodeURIComponent(agentId)}`, { signal }), [agentId], tick);
  const alerts = useLoad((signal) => api<Page<Alert>>('GET', '/alerts', { query: { agent: agentId, limit: 20 }, signal }), [agentId], tick);
  return (
    <>
      <p class="crumbs">
        <a href={href('agents')}>Agents</a> /
      </p>
      <div class="page-head">
        <h1>{agentId}</h1>
        <RangeBar choice={choice} range={range} onChoice={setChoice} timeZone={timeZone} onTimeZone={setTimeZone} />
      </div>
      <Panel id="agent" title="Agent" load={agent}>
        {(a) => (
          <dl class="figures">
            <Figure small name="Name" value={a.name} />
            <Figure small name="Total spend" value={formatAmount(a.totalSpend)} field="totalSpend" />
            <Figure small name="Transactions" value={formatCount(a.transactionCount)} field="transactionCount" />
            <Figure small name="Last active" value={formatTime(a.lastActive, timeZone)} />
            <Figure small name="Status" value={a.status} />
            <Figure small name="Authorized by" value={a.authorizedBy ?? '–'} />
            <Figure small name="Known since" value={formatTime(a.createdAt, timeZone)} />
          </dl>
        )}
      </Panel>
      <SpendOverTime range={range} timeZone={timeZone} tick={tick} agent={agentId} />
      <div class="grid two">
        <BreakdownPanel id="agent-endpoints" title="Endpoints" path="/analytics/by-endpoint" query={{ from: range.from, to: range.to, agent: agentId, level: 'url' }} tick={tick} />
        <Panel id="agent-alerts" title="Alerts" load={alerts} isEmpty={(p) => p.data.length === 0} empty="No alerts for this agent.">
          {(page) => <AlertList alerts={page.data} more={page.next_cursor ? `/dashboard/alerts?agent=${encodeURIComponent(agentId)}` : undefined} />}
        </Panel>
      </div>
    </>
  );
}
