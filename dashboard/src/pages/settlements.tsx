/**
 * Settlements: records checked against the chain (docs/reconciliation.md). Payments from agents'
 * wallets that no record claims come first, then how many records stand in each status with what
 * they reported and what the chain showed per token (GET /settlements/summary), then the entries
 * themselves (GET /settlements), filtered by status, agent and time in the URL.
 */
import type { ComponentChildren } from 'preact';
import { api, type Page } from '../api';
import { ChoiceFilter, TextFilter, TimeFilter } from '../components/filters';
import { PagedList } from '../components/list';
import { Money } from '../components/money';
import { Network } from '../components/network';
import { Panel, useLoad } from '../components/panel';
import { useRefreshTick, ZonePicker } from '../components/range-bar';
import { Differences, SETTLEMENT_MEANING, SETTLEMENT_STATUSES, SettlementBadge, settlementTitle, ShortHex, TokenAmount, type ShownStatus } from '../components/settlement';
import { TableHead } from '../components/table-head';
import { Time } from '../components/time';
import { formatCount } from '../format';
import { inCurrency } from '../money';
import { href, useLocation } from '../router';
import type { Settlement, SettlementsSummary } from '../types';

type Filter = { status?: string; agent?: string; from?: string; to?: string };

export function Settlements() {
  const location = useLocation();
  const tick = useRefreshTick();
  const params = new URLSearchParams(location.search);
  const filter: Filter = Object.fromEntries(['status', 'agent', 'from', 'to'].map((name) => [name, params.get(name) || undefined]));
  const range = { from: filter.from, to: filter.to };
  const summary = useLoad((signal) => api<SettlementsSummary>('GET', '/settlements/summary', { query: range, signal }), [range], tick);
  return (
    <>
      <div class="page-head">
        <h1>Settlements</h1>
      </div>
      {summary.data && summary.data.networks.length === 0 && <ReconciliationOff />}
      <form class="filters" aria-label="Filter settlements" onSubmit={(e) => e.preventDefault()}>
        <ChoiceFilter label="Status" name="status" value={filter.status ?? ''} choices={SETTLEMENT_STATUSES} />
        <TextFilter label="Agent" name="agent" value={filter.agent ?? ''} />
        <TimeFilter label="From" name="from" value={filter.from ?? ''} />
        <TimeFilter label="Until" name="to" value={filter.to ?? ''} />
        <ZonePicker />
      </form>
      <Unreported filter={filter} tick={tick} />
      <Panel id="settlement-summary" title="Records against the chain, by status" load={summary}>
        {(s) => <SummaryTable summary={s} />}
      </Panel>
      <PagedList<Settlement> id="settlements" title="Settlements, newest first" path="/settlements" query={filter} tick={tick} empty="No settlement matches these filters.">
        {(entries) => <SettlementTable entries={entries} />}
      </PagedList>
    </>
  );
}

/** Said plainly when no chain is configured: nothing is checked, and how to start. */
function ReconciliationOff() {
  return (
    <div class="notice warn" role="status" data-reconciliation="off">
      <p>
        <strong>Reconciliation is off:</strong> no chain is configured, so no record is checked against the chain and no wallet is
        followed.
      </p>
      <p>
        To turn it on, set <code>CHAIN_RPC_URLS</code> on the service to a JSON object of network to RPC URL, for example{' '}
        <code>{'{"eip155:8453": "https://mainnet.base.org"}'}</code>, and restart it. See <code>docs/reconciliation.md</code>.
      </p>
    </div>
  );
}

/** Transfers from registered wallets that no record claims: the page's first concern, in the filter's agent and time. */
function Unreported({ filter, tick }: { filter: Filter; tick: number }) {
  // The status filter narrows the list below; these are shown whatever it is.
  const query = { status: 'unreported', agent: filter.agent, from: filter.from, to: filter.to, limit: 200 };
  const load = useLoad((signal) => api<Page<Settlement>>('GET', '/settlements', { query, signal }), [query], tick);
  const n = load.data?.data.length ?? 0;
  const title = load.data ? `Payments no record claims: ${n}${load.data.next_cursor ? '+' : ''}` : 'Payments no record claims';
  return (
    <Panel
      id="unreported"
      class={n > 0 ? 'unreported alarming' : 'unreported'}
      title={title}
      load={load}
      isEmpty={(p) => p.data.length === 0}
      empty="No transfer from a registered wallet is without its record. (Register an agent's wallets on the agent to have them followed.)"
    >
      {(page) => (
        <>
          <p class="muted">{SETTLEMENT_MEANING.unreported} Each raised a critical alert; an agent under a policy with on_unreported “suspend” was suspended.</p>
          <table class="rows-table unreported-table">
            <TableHead columns={['Transaction', 'Agent', { label: 'Amount', num: true }, 'Payee', { label: 'Block', num: true }, 'Seen']} />
            <tbody>
              {page.data.map((s) => (
                <tr key={s.id} data-unreported={s.tx_hash}>
                  <td class="row-main" data-label="Transaction">
                    <ShortHex value={s.tx_hash} /> <span class="muted">on</span> <Network id={s.network} />
                    {s.note && <div class="muted" data-note>{s.note}</div>}
                  </td>
                  <td data-label="Agent">
                    <a href={href('agents', s.agent_id)}>{s.agent_id}</a>
                  </td>
                  <td class="num" data-label="Amount">
                    <TokenAmount amount={s.observed?.amount} raw={s.observed?.amount_raw} token={s.observed?.token} />
                  </td>
                  <td data-label="Payee">
                    <ShortHex value={s.observed?.payee} />
                  </td>
                  <td class="num" data-label="Block" data-block={s.observed?.block_number ?? ''}>
                    {s.observed?.block_number ?? '–'}
                  </td>
                  <td data-label="Seen">
                    <Time iso={s.occurred_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Panel>
  );
}

/** Per-token sums, one line each (amounts of different tokens are never added). */
function TokenSums({ rows }: { rows: { asset: string; amount: string }[] }) {
  if (rows.length === 0) return <span class="muted">–</span>;
  return (
    <ul class="token-sums">
      {rows.map((r) => (
        <li key={r.asset} data-asset={r.asset}>
          <TokenAmount amount={r.amount} token={r.asset} />
        </li>
      ))}
    </ul>
  );
}

function SummaryTable({ summary }: { summary: SettlementsSummary }) {
  const currency = inCurrency(summary.currency);
  const statusLink = (status: string, children: ComponentChildren) => <a href={`${href('settlements')}?status=${status}`}>{children}</a>;
  const row = (status: ShownStatus, count: number, value: string, unvalued: number, reported: { asset: string; amount: string }[], observed: { asset: string; amount: string }[] | undefined) => (
    <tr key={status} data-summary-status={status}>
      <td class="row-main" data-label="Status">
        {status === 'unreported_settlement' ? <SettlementBadge status={status} /> : statusLink(status, <SettlementBadge status={status} />)}
        <div class="muted">{SETTLEMENT_MEANING[status]}</div>
      </td>
      <td class="num" data-label="Records" data-count={count}>
        {formatCount(count)}
      </td>
      <td class="num" data-label={`Value (${summary.currency})`}>
        {status === 'unreported' ? <span class="muted" title="No record: nothing reported to value">–</span> : <Money value={value} denomination={currency} />}
        {unvalued > 0 && <div class="muted" data-unvalued={unvalued}>{formatCount(unvalued)} unvalued: not in it</div>}
      </td>
      <td class="num" data-label="Reported" data-sums="reported">
        <TokenSums rows={reported} />
      </td>
      <td class="num" data-label="Observed on chain" data-sums="observed">
        {observed ? <TokenSums rows={observed} /> : <span class="muted" title="No transaction to look at">–</span>}
      </td>
    </tr>
  );
  return (
    <>
      <p class="muted" data-networks>
        {summary.networks.length === 0
          ? 'No network is checked.'
          : `Checked on ${summary.networks.map((n) => `${n.network} (${n.confirmations} confirmation${n.confirmations === 1 ? '' : 's'})`).join(', ')}.`}{' '}
        {summary.from ? (
          <>
            From <Time iso={summary.from} absolute /> until <Time iso={summary.to} absolute />.
          </>
        ) : (
          <>
            All time until <Time iso={summary.to} absolute />.
          </>
        )}
      </p>
      <table class="rows-table summary-table">
        <TableHead columns={['Status', { label: 'Records', num: true }, { label: `Value (${summary.currency})`, num: true }, { label: 'Reported', num: true }, { label: 'Observed on chain', num: true }]} />
        <tbody>
          {summary.statuses.map((s) =>
            row(
              s.status,
              s.count,
              s.value,
              s.unvalued,
              // A token only one side names sums to 0 on the other: left out there.
              s.assets.filter((a) => /[1-9]/.test(a.reported)).map((a) => ({ asset: a.asset, amount: a.reported })),
              s.assets.filter((a) => /[1-9]/.test(a.observed)).map((a) => ({ asset: a.asset, amount: a.observed })),
            ),
          )}
          {row(
            'unreported_settlement',
            summary.unreported_settlement.count,
            summary.unreported_settlement.value,
            0,
            summary.unreported_settlement.assets.map((a) => ({ asset: a.asset, amount: a.reported })),
            undefined,
          )}
        </tbody>
      </table>
    </>
  );
}

function SettlementTable({ entries }: { entries: Settlement[] }) {
  return (
    <table class="rows-table settlement-table">
      <TableHead columns={['Record', 'Agent', 'Status', { label: 'Reported', num: true }, { label: 'Observed', num: true }, 'What differs, or why', 'Time ↓']} />
      <tbody>
        {entries.map((s) => (
          <tr key={s.id} data-settlement={s.id} data-status={s.status}>
            <td class="row-main" data-label="Record">
              {s.record_id ? <a href={href('records', s.record_id)}>{s.record_id}</a> : <span>no record</span>}
              <div class="muted">
                tx <ShortHex value={s.tx_hash} /> <Network id={s.network} />
                {s.observed?.block_number !== null && s.observed?.block_number !== undefined && <> · block {s.observed.block_number}</>}
              </div>
            </td>
            <td data-label="Agent">
              <a href={href('agents', s.agent_id)}>{s.agent_id}</a>
            </td>
            <td data-label="Status">
              <SettlementBadge status={s.status} title={settlementTitle(s)} />
            </td>
            <td class="num" data-label="Reported">
              {s.reported ? <TokenAmount amount={s.reported.amount} raw={s.reported.amount_raw} token={s.reported.token ?? s.reported.asset} /> : <span class="muted">–</span>}
            </td>
            <td class="num" data-label="Observed">
              <TokenAmount amount={s.observed?.amount} raw={s.observed?.amount_raw} token={s.observed?.token} />
            </td>
            <td data-label="What differs, or why" data-why>
              {s.differences.length > 0 && <Differences differences={s.differences} />}
              {s.note && <div data-note>{s.note}</div>}
              {s.differences.length === 0 && !s.note && <span class="muted">–</span>}
            </td>
            <td data-label="Time">
              <Time iso={s.occurred_at} />
              {s.checked_at && (
                <div class="muted">
                  checked <Time iso={s.checked_at} />
                </div>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
