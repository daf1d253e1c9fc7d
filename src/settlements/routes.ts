/** Records checked against the chain: the list, one record's or transaction's, and the summary (docs/reconciliation.md). */
import BigNumber from 'bignumber.js';
import type { SettlementStatus } from '../domain/settlement.js';
import { decodeCursor, keysetPage } from '../http/cursor.js';
import { defineRoute, type RouteDeps } from '../http/routes.js';
import { parseQueryTime } from '../http/validation.js';
import { findTeam } from '../teams/repository.js';
import { listSettlements, settlementsOfRecords, type Settlement, type SettlementCursor } from './repository.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A settlement as the API shows it. */
export function settlementBody(s: Settlement) {
  return {
    id: s.id,
    record_id: s.recordId,
    agent_id: s.agentId,
    network: s.network,
    tx_hash: s.txHash,
    status: s.status,
    reported: s.reported,
    observed: s.observed,
    differences: s.differences,
    note: s.note,
    occurred_at: iso(s.occurredAt)!,
    checked_at: iso(s.checkedAt),
  };
}

const EXAMPLE = {
  id: 'r:9f2c4e1a7b3d5f60',
  record_id: '9f2c4e1a7b3d5f60',
  agent_id: 'research-bot',
  network: 'eip155:8453',
  tx_hash: '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060',
  status: 'mismatch',
  reported: { amount: '0.25', amount_raw: '250000', asset: 'USDC', token: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', payer: '0x90f79bf6eb2c4f870365e785982e1f101e93b906', payee: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc' },
  observed: {
    amount: '0.01', amount_raw: '10000', token: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', payer: '0x90f79bf6eb2c4f870365e785982e1f101e93b906', payee: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
    block_number: 23811022, block_hash: '0x7d1a0ad35c5d4cfa0b04df8a7df1b4e6c1de1b6f1b0b7a0e5a8b3f1f0c1d2e3f', log_index: 3, receipt: 'success',
  },
  differences: [{ field: 'amount', reported: '0.25', observed: '0.01' }],
  note: null,
  occurred_at: '2026-12-02T09:58:12.345Z',
  checked_at: '2026-12-02T09:58:31.002Z',
};

const STATUSES: SettlementStatus[] = ['pending', 'verified', 'mismatch', 'failed', 'not_found', 'unverifiable', 'unreported'];

const isCursor = (v: unknown): v is SettlementCursor =>
  typeof v === 'object' && v !== null && typeof (v as SettlementCursor).occurredAt === 'number' && typeof (v as SettlementCursor).id === 'string';

export const listSettlementsRoute = defineRoute<unknown, { status?: SettlementStatus; agent?: string; from?: string; to?: string; limit?: number; cursor?: string }>({
  method: 'get',
  path: '/settlements',
  operationId: 'listSettlements',
  summary: 'Records checked against the chain, and payments no record claims, newest first',
  description:
    'One entry per record with a transaction hash (once taken in, within a poll of its loading) and per transfer from a registered ' +
    'wallet that no record claimed within the grace period (`status` unreported, `record_id` null). Filters: `status`, `agent`, and ' +
    '`from`/`to` (Unix ms or ISO 8601: when the record was made, or the transfer seen). Pass `next_cursor` as `cursor` for the next page. ' +
    'Empty when no chain is configured (CHAIN_RPC_URLS). Scope `read`.',
  tag: 'settlements',
  scope: 'read',
  query: 'settlements-query.json',
  responses: { 200: { description: 'A page of settlements', schema: 'settlement-page.json', example: { data: [EXAMPLE], next_cursor: null } } },
  async handler({ query, team, deps }) {
    const filter = {
      status: query.status,
      agent: query.agent,
      from: query.from === undefined ? undefined : parseQueryTime(query.from, 'from'),
      to: query.to === undefined ? undefined : parseQueryTime(query.to, 'to'),
    };
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isCursor);
    const { rows, next_cursor } = await keysetPage(
      query.limit ?? 50,
      (n) => listSettlements(deps.db, team.teamId, filter, { limit: n, after }),
      (last) => ({ occurredAt: last.occurredAt, id: last.id }),
    );
    return { body: { data: rows.map(settlementBody), next_cursor } };
  },
});

export const recordSettlementsRoute = defineRoute<{ ids: string[] }>({
  method: 'post',
  path: '/records/settlements',
  operationId: 'recordSettlements',
  summary: 'The settlements of records, by id',
  description:
    "Each record's settlement, as GET /settlements shows it. A record left out has none (yet): it carries no transaction hash, or it " +
    'was stored within the last poll. Up to 500 ids. Scope `read`.',
  tag: 'settlements',
  scope: 'read',
  body: 'record-values-query.json',
  bodyExample: { ids: ['9f2c4e1a7b3d5f60'] },
  responses: { 200: { description: 'The settlements found', schema: 'record-settlements.json', example: { data: [EXAMPLE] } } },
  async handler({ body, team, deps }) {
    const rows = await settlementsOfRecords(deps.db, team.teamId, [...new Set(body.ids)]);
    return { body: { data: rows.map(settlementBody) } };
  },
});

interface StatusRow {
  status: SettlementStatus;
  n: string;
  value: string;
  unvalued: string;
}

interface AssetRow {
  status: SettlementStatus;
  asset: string;
  reported: string;
  observed: string;
}

/** The summary, from ClickHouse's copy of the settlements (current within a poll) and the events. */
export async function settlementSummary(deps: Pick<RouteDeps, 'db' | 'readEvents' | 'config'>, teamId: string, from: number | undefined, to: number) {
  const team = await findTeam(deps.db, teamId);
  const currency = team?.currency ?? 'USD';
  const events = await deps.readEvents(teamId);
  const params = { team: teamId, from: from ?? 0, to, currency };
  const range = 'occurred_at >= fromUnixTimestamp64Milli({from:Int64}) AND occurred_at < fromUnixTimestamp64Milli({to:Int64})';
  const current = `(SELECT * FROM settlements FINAL WHERE team_id = {team:String} AND ${range})`;
  const [statuses, reported, observed, bare, bareAssets] = await Promise.all([
    events.query<StatusRow>(
      `SELECT s.status AS status, toString(count()) AS n, toString(ifNull(sumIf(e.value, e.currency = {currency:String}), 0)) AS value,
              toString(countIf(s.record_id != '' AND (e.value IS NULL OR e.currency != {currency:String}))) AS unvalued
         FROM ${current} AS s
         LEFT JOIN (SELECT id, value, currency FROM events WHERE team_id = {team:String} AND tx_hash IS NOT NULL) AS e ON e.id = s.record_id
        GROUP BY status`,
      params,
    ),
    events.query<AssetRow>(
      `SELECT status, if(token != '', token, asset) AS asset, toString(sum(ifNull(reported_amount, 0))) AS reported, '0' AS observed
         FROM ${current} WHERE record_id != '' GROUP BY status, asset`,
      params,
    ),
    events.query<AssetRow>(
      `SELECT status, observed_token AS asset, '0' AS reported, toString(sum(ifNull(observed_amount, 0))) AS observed
         FROM ${current} WHERE observed_token != '' AND observed_amount IS NOT NULL GROUP BY status, asset`,
      params,
    ),
    events.query<{ n: string; value: string }>(
      `SELECT toString(count()) AS n, toString(ifNull(sumIf(value, currency = {currency:String}), 0)) AS value FROM events
        WHERE team_id = {team:String} AND event_time >= fromUnixTimestamp64Milli({from:Int64}) AND event_time < fromUnixTimestamp64Milli({to:Int64})
          AND (tx_hash IS NULL OR tx_hash = '') AND amount > 0 AND policy_evaluation != 'blocked'`,
      params,
    ),
    events.query<{ asset: string; reported: string }>(
      `SELECT asset, toString(sum(amount)) AS reported FROM events
        WHERE team_id = {team:String} AND event_time >= fromUnixTimestamp64Milli({from:Int64}) AND event_time < fromUnixTimestamp64Milli({to:Int64})
          AND (tx_hash IS NULL OR tx_hash = '') AND amount > 0 AND policy_evaluation != 'blocked'
        GROUP BY asset ORDER BY asset`,
      params,
    ),
  ]);
  const assets = new Map<string, Map<string, { reported: BigNumber; observed: BigNumber }>>();
  for (const row of [...reported, ...observed]) {
    let byAsset = assets.get(row.status);
    if (!byAsset) assets.set(row.status, (byAsset = new Map()));
    const entry = byAsset.get(row.asset) ?? { reported: new BigNumber(0), observed: new BigNumber(0) };
    byAsset.set(row.asset, { reported: entry.reported.plus(row.reported), observed: entry.observed.plus(row.observed) });
  }
  const byStatus = new Map(statuses.map((r) => [r.status, r]));
  return {
    from: iso(from ?? null),
    to: iso(to)!,
    currency,
    networks: Object.entries(deps.config.chains?.confirmations ?? {}).map(([network, confirmations]) => ({ network, confirmations })),
    statuses: STATUSES.filter((s) => byStatus.has(s)).map((status) => ({
      status,
      count: Number(byStatus.get(status)!.n),
      value: new BigNumber(byStatus.get(status)!.value).toFixed(),
      unvalued: Number(byStatus.get(status)!.unvalued),
      assets: [...(assets.get(status) ?? new Map()).entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([asset, sums]) => ({ asset, reported: sums.reported.toFixed(), observed: sums.observed.toFixed() })),
    })),
    unreported_settlement: {
      count: Number(bare[0]?.n ?? 0),
      value: new BigNumber(bare[0]?.value ?? 0).toFixed(),
      assets: bareAssets.map((r) => ({ asset: r.asset, reported: new BigNumber(r.reported).toFixed() })),
    },
  };
}

export const settlementSummaryRoute = defineRoute<unknown, { from?: string; to?: string }>({
  method: 'get',
  path: '/settlements/summary',
  operationId: 'settlementSummary',
  summary: 'Per settlement status: how many, what the records reported and what the chain showed, per token',
  description:
    'Counts and sums per status over records made (or transfers seen) in [`from`, `to`), amounts per token (never added across ' +
    'tokens), values in the team\'s currency; `unreported_settlement`: records of a payment without a transaction hash. Read from ' +
    "ClickHouse's copy of the settlements, current within a poll (SETTLEMENT_POLL_MS). Scope `read`.",
  tag: 'settlements',
  scope: 'read',
  query: 'settlements-summary-query.json',
  responses: {
    200: {
      description: 'The summary',
      schema: 'settlements-summary.json',
      example: {
        from: '2026-12-01T00:00:00.000Z',
        to: '2026-12-02T00:00:00.000Z',
        currency: 'USD',
        networks: [{ network: 'eip155:8453', confirmations: 12 }],
        statuses: [
          { status: 'verified', count: 1289, value: '12.345678', unvalued: 0, assets: [{ asset: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', reported: '12.345678', observed: '12.345678' }] },
          { status: 'mismatch', count: 1, value: '0.25', unvalued: 0, assets: [{ asset: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', reported: '0.25', observed: '0.01' }] },
        ],
        unreported_settlement: { count: 3, value: '0.03', assets: [{ asset: 'USDC', reported: '0.03' }] },
      },
    },
  },
  async handler({ query, team, deps }) {
    const from = query.from === undefined ? undefined : parseQueryTime(query.from, 'from');
    const to = query.to === undefined ? Date.now() : parseQueryTime(query.to, 'to');
    return { body: await settlementSummary(deps, team.teamId, from, to) };
  },
});

export const settlementRoutes = [listSettlementsRoute, settlementSummaryRoute, recordSettlementsRoute];
