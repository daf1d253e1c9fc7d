/**
 * Records: the team's audit records (what its agents paid, as their clients sent it), newest first,
 * searched by agent, endpoint, status and time through POST /audit/query (the SDK's query, with
 * offset paging), and one record's page (GET /audit/:id) that alerts' sample records link to.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { ChoiceFilter, TextFilter, TimeFilter } from '../components/filters';
import { LoadMore } from '../components/list';
import { Money } from '../components/money';
import { Network } from '../components/network';
import { errorText, Panel, useLoad } from '../components/panel';
import { Differences, RecordSettlementStatus, ShortHex, TokenAmount, useRecordSettlements } from '../components/settlement';
import { useRefreshTick, ZonePicker } from '../components/range-bar';
import { TableHead } from '../components/table-head';
import { Time } from '../components/time';
import { formatCount } from '../format';
import { denominationOf, exactAmount, inCurrency, UNKNOWN, type Denomination } from '../money';
import { href, useLocation } from '../router';
import { recordTimeIso } from '../time';
import type { AuditQuery, AuditRecord, RecordValue, Settlement, UsedRate } from '../types';

const PAGE = 50;
const STATUSES = ['allowed', 'flagged', 'blocked'] as const;

/** The records page, filtered (its URL): what an alert's window or an agent's page links to. */
export function recordsHref(filter: { agent?: string; from?: string; to?: string; endpoint?: string } = {}): string {
  const params = new URLSearchParams(Object.entries(filter).filter((e): e is [string, string] => Boolean(e[1])));
  const text = params.toString();
  return `${href('records')}${text ? `?${text}` : ''}`;
}

/** A record's amount is in its own asset (none: not known). */
export const recordDenomination = (record: Pick<AuditRecord, 'asset'>): Denomination => (record.asset ? denominationOf([record.asset]) : UNKNOWN);

/** The URL's filters as the SDK's query; `to` is excluded, as every window on the dashboard (endTime is inclusive). */
function queryOf(params: URLSearchParams): AuditQuery {
  const query: AuditQuery = {};
  const agent = params.get('agent');
  const endpoint = params.get('endpoint');
  const status = params.get('status');
  const from = Date.parse(params.get('from') ?? '');
  const to = Date.parse(params.get('to') ?? '');
  if (agent) query.agentId = agent;
  if (endpoint) query.endpoint = endpoint;
  if (status && (STATUSES as readonly string[]).includes(status)) query.status = [status as AuditRecord['policy_evaluation']];
  if (Number.isFinite(from)) query.startTime = from;
  if (Number.isFinite(to)) query.endTime = to - 1;
  return query;
}

export function Records() {
  const location = useLocation();
  const tick = useRefreshTick();
  const params = new URLSearchParams(location.search);
  const query = queryOf(params);
  return (
    <>
      <div class="page-head">
        <h1>Records</h1>
      </div>
      <form class="filters" aria-label="Search records" onSubmit={(e) => e.preventDefault()}>
        <TextFilter label="Agent" name="agent" value={params.get('agent') ?? ''} />
        <TextFilter label="Endpoint contains" name="endpoint" value={params.get('endpoint') ?? ''} />
        <ChoiceFilter label="Status" name="status" value={params.get('status') ?? ''} choices={STATUSES} />
        <TimeFilter label="From" name="from" value={params.get('from') ?? ''} />
        <TimeFilter label="Until" name="to" value={params.get('to') ?? ''} />
        <ZonePicker />
      </form>
      <RecordList query={query} tick={tick} />
    </>
  );
}

/**
 * The matching records, 50 at a time: the first page refreshes every 10 s; "Load more" asks for
 * the next offset. Records that arrived meanwhile push older ones down, so a later page may repeat
 * a few already shown: they are shown once.
 */
function RecordList({ query, tick }: { query: AuditQuery; tick: number }) {
  const ordered = { ...query, orderBy: 'created_at', order: 'desc' } as const;
  // One more than a page tells whether there is a next one.
  const first = useLoad((signal) => api<AuditRecord[]>('POST', '/audit/query', { body: { ...ordered, limit: PAGE + 1, offset: 0 }, signal }), [query], tick);
  const count = useLoad((signal) => api<{ count: number }>('POST', '/audit/count', { body: query, signal }), [query], tick);
  const [more, setMore] = useState<{ items: AuditRecord[]; hasMore: boolean; busy?: boolean; error?: string }>({ items: [], hasMore: false });
  const key = JSON.stringify(query);
  useEffect(() => setMore({ items: [], hasMore: false }), [key]);
  const firstPage = first.data?.slice(0, PAGE) ?? [];
  const hasMore = more.items.length ? more.hasMore : (first.data?.length ?? 0) > PAGE;
  const loadMore = async () => {
    setMore((m) => ({ ...m, busy: true, error: undefined }));
    try {
      const page = await api<AuditRecord[]>('POST', '/audit/query', { body: { ...ordered, limit: PAGE + 1, offset: PAGE + more.items.length } });
      setMore((m) => ({ items: [...m.items, ...page.slice(0, PAGE)], hasMore: page.length > PAGE }));
    } catch (err) {
      setMore((m) => ({ ...m, busy: false, error: errorText(err as Error) }));
    }
  };
  const countText = count.state === 'ready' ? `${formatCount(count.data.count)} ${count.data.count === 1 ? 'record matches' : 'records match'}` : undefined;
  return (
    <Panel
      id="records"
      title="Records, newest first"
      load={first}
      isEmpty={(rows) => rows.length === 0}
      empty="No record matches these filters."
      actions={countText && (
        <span class="muted" data-count={count.data?.count}>
          {countText}
        </span>
      )}
    >
      {() => {
        const seen = new Set<string>();
        const rows = [...firstPage, ...more.items].filter((r) => !seen.has(r.id) && (seen.add(r.id), true));
        return (
          <>
            <RecordTable records={rows} />
            {hasMore && <LoadMore onClick={loadMore} busy={more.busy} error={more.error} />}
          </>
        );
      }}
    </Panel>
  );
}

export function Evaluation({ status }: { status: string }) {
  return <span class={`badge status-${status}`}>{status}</span>;
}

/** What records are worth (POST /records/values): the SDK's records say what was sent, not what it is worth. */
function useRecordValues(ids: string[]): Map<string, RecordValue> | undefined {
  const load = useLoad((signal) => (ids.length === 0 ? Promise.resolve({ data: [] }) : api<{ data: RecordValue[] }>('POST', '/records/values', { body: { ids }, signal })), [ids]);
  return load.data && new Map(load.data.data.map((v) => [v.id, v]));
}

const UNVALUED_TITLE = 'No rate values its asset (or its amount is unknown): it counts in no budget in value. Give the asset a rate on the Rates page.';

/** A record's value in the team's currency, or a flag that it has none. */
function RecordValueText({ value }: { value: RecordValue | undefined }) {
  if (!value || value.currency === '') return <span class="muted">–</span>;
  if (value.value === null) {
    return (
      <span class="badge status-flagged" data-unvalued title={UNVALUED_TITLE}>
        unvalued
      </span>
    );
  }
  return <Money value={value.value} denomination={inCurrency(value.currency)} />;
}

function RecordTable({ records }: { records: AuditRecord[] }) {
  const values = useRecordValues(records.map((r) => r.id));
  const settlements = useRecordSettlements(records);
  return (
    <table class="rows-table record-table">
      <TableHead columns={['Endpoint', 'Agent', { label: 'Amount', num: true }, { label: 'Value', num: true }, 'Status', 'Settlement', 'Time ↓']} />
      <tbody>
        {records.map((r) => (
          <tr key={r.id} data-record={r.id}>
            <td class="row-main">
              <a href={href('records', r.id)}>
                <span class="method">{r.method}</span> {r.endpoint}
              </a>
              <div class="muted record-id">{r.id}</div>
            </td>
            <td data-label="Agent">
              <a href={href('agents', r.agent_id)}>{r.agent_id}</a>
            </td>
            <td class="num" data-label="Amount">
              <Money value={r.amount} denomination={recordDenomination(r)} />
            </td>
            <td class="num" data-label="Value" data-value={r.id}>
              {values && <RecordValueText value={values.get(r.id)} />}
            </td>
            <td data-label="Status">
              <Evaluation status={r.policy_evaluation} />
            </td>
            <td data-label="Settlement" data-settlement={r.id}>
              {settlements && <RecordSettlementStatus record={r} settlement={settlements.get(r.id)} />}
            </td>
            <td data-label="Time">
              <Time iso={recordTimeIso(r.created_at)} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function RecordPage({ recordId }: { recordId: string }) {
  const load = useLoad((signal) => api<AuditRecord | null>('GET', `/audit/${encodeURIComponent(recordId)}`, { signal }), [recordId]);
  return (
    <>
      <p class="crumbs">
        <a href={href('records')}>Records</a> /
      </p>
      <Panel id="record" title="Record" load={load} isEmpty={(r) => r === null} empty={`This team has no record “${recordId}”.`}>
        {(record) => <RecordDetails record={record!} />}
      </Panel>
    </>
  );
}

const orDash = (value: ComponentChildren) => (value === null || value === undefined || value === '' ? <span class="muted">–</span> : value);

function RecordDetails({ record }: { record: AuditRecord }) {
  const denomination = recordDenomination(record);
  const value = useRecordValues([record.id])?.get(record.id);
  const settlements = useRecordSettlements([record]);
  // What every record has, then what its client sent of the rest.
  const rows: [string, ComponentChildren, string?][] = [
    ['Agent', <a href={href('agents', record.agent_id)}>{record.agent_id}</a>],
    ['Amount', <Money value={record.amount} denomination={denomination} />],
    ['Amount, exact', `${exactAmount(record.amount)}${record.asset ? ` ${record.asset}` : ''}`, 'amount'],
    ['Value', <RecordValueText value={value} />, 'value'],
    ['Valued by', value?.valuation ? <UsedRates valuation={value.valuation} /> : null],
    ['Status', <Evaluation status={record.policy_evaluation} />],
    ['Time', <Time iso={recordTimeIso(record.created_at)} absolute />],
    ['Method', record.method],
    ['Endpoint', record.endpoint, 'endpoint'],
    ['Network', record.network ? <Network id={record.network} /> : null],
    ['Settlement', settlements && <RecordSettlement record={record} settlement={settlements.get(record.id)} />, 'settlement'],
  ];
  const optional: [string, ComponentChildren, string?][] = [
    ['Settled', record.settled_at ? <Time iso={recordTimeIso(record.settled_at)} absolute /> : null],
    ['Answer', record.status_code ? `${record.status_code} in ${formatCount(record.response_time_ms)} ms` : null],
    ['Category', record.category],
    ['Scheme', record.scheme],
    ['Transaction', record.tx_hash],
    ['Payer', record.payer_address],
    ['Payee', record.payee_address],
    ['Facilitator', record.facilitator],
    ['Client’s policy', record.policy_id],
    ['Budget left (client)', record.budget_remaining],
    ['Authorization', record.authorization_id ? <a href={href('authorizations', record.authorization_id)}>{record.authorization_id}</a> : null, 'authorization'],
    ['Team label', record.team],
    ['Human sponsor', record.human_sponsor],
    ['Task', record.task_id],
    ['Session', record.session_id],
    ['Tags', record.tags?.length ? record.tags.join(', ') : null],
  ];
  for (const row of optional) if (row[1] !== null && row[1] !== undefined && row[1] !== '') rows.push(row);
  const metadata = record.metadata && Object.keys(record.metadata).length ? JSON.stringify(record.metadata, null, 2) : undefined;
  return (
    <div class="record-details" data-record={record.id}>
      <h2 class="alert-title">
        <code>{record.id}</code>
      </h2>
      <dl class="facts">
        {rows.map(([name, value, field]) => (
          <div key={name} data-field={field}>
            <dt>{name}</dt>
            <dd>{orDash(value)}</dd>
          </div>
        ))}
      </dl>
      {metadata && (
        <details class="metadata">
          <summary>Metadata</summary>
          <pre>{metadata}</pre>
        </details>
      )}
    </div>
  );
}

/** The record against the chain: its status, what differs or why, and what the chain showed. */
function RecordSettlement({ record, settlement }: { record: AuditRecord; settlement: Settlement | undefined }) {
  return (
    <>
      <RecordSettlementStatus record={record} settlement={settlement} />
      {settlement && settlement.differences.length > 0 && <Differences differences={settlement.differences} />}
      {settlement?.note && <div class="muted" data-note>{settlement.note}</div>}
      {settlement?.observed && settlement.observed.block_number !== null && (
        <div class="muted" data-on-chain>
          on chain: <TokenAmount amount={settlement.observed.amount} raw={settlement.observed.amount_raw} token={settlement.observed.token} /> to{' '}
          <ShortHex value={settlement.observed.payee} />, block {settlement.observed.block_number}
        </div>
      )}
    </>
  );
}

/** "1 EURC = 1 EUR (built-in), 1 EUR = 1.08 USD (team rate from …)": the rates a value used. */
function UsedRates({ valuation }: { valuation: NonNullable<RecordValue['valuation']> }) {
  const one = (r: UsedRate) => (
    <span data-used-rate={r.asset}>
      1 {r.asset} = {r.value} {r.currency} (
      {r.source === 'team' ? (
        <>
          team rate from <Time iso={r.valid_from} absolute />
        </>
      ) : (
        'built-in'
      )}
      )
    </span>
  );
  return valuation.conversion ? (
    <>
      {one(valuation.rate)}, {one(valuation.conversion)}
    </>
  ) : (
    one(valuation.rate)
  );
}
