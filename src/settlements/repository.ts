/** The settlements' store: checked records and unreported transfers, agents' wallets, transfers seen, cursors. */
import type { Difference, SettlementStatus } from '../domain/settlement.js';
import type { Sql } from '../stores/sql.js';

/** What a record reported, in the store (amounts as decimal strings). */
export interface ReportedFields {
  amount: string | null;
  amount_raw: string | null;
  asset: string;
  /** Its token contract on the network; null when none is known. */
  token: string | null;
  payer: string | null;
  payee: string | null;
}

/** What the chain showed (the transfer the record is compared with). */
export interface ObservedFields {
  amount: string | null;
  amount_raw: string | null;
  token: string | null;
  payer: string | null;
  payee: string | null;
  block_number: number | null;
  block_hash: string | null;
  log_index: number | null;
  /** reverted or success, once a receipt was seen. */
  receipt: 'success' | 'reverted' | null;
}

export interface Settlement {
  id: string;
  teamId: string;
  recordId: string | null;
  agentId: string;
  network: string;
  txHash: string;
  status: SettlementStatus;
  reported: ReportedFields | null;
  observed: ObservedFields | null;
  differences: Difference[];
  note: string | null;
  blockNumber: number | null;
  blockHash: string | null;
  occurredAt: number;
  graceFrom: number;
  checkedAt: number | null;
  nextCheckAt: number;
  createdAt: number;
}

interface Row {
  id: string;
  team_id: string;
  record_id: string | null;
  agent_id: string;
  network: string;
  tx_hash: string;
  status: SettlementStatus;
  reported: string;
  observed: string | null;
  differences: string;
  note: string | null;
  block_number: number | null;
  block_hash: string | null;
  occurred_at: number;
  grace_from: number;
  checked_at: number | null;
  next_check_at: number;
  created_at: number;
}

const COLUMNS = 'id, team_id, record_id, agent_id, network, tx_hash, status, reported, observed, differences, note, block_number, block_hash, occurred_at, grace_from, checked_at, next_check_at, created_at';

function toSettlement(r: Row): Settlement {
  const reported = JSON.parse(r.reported) as Partial<ReportedFields>;
  return {
    id: r.id,
    teamId: r.team_id,
    recordId: r.record_id,
    agentId: r.agent_id,
    network: r.network,
    txHash: r.tx_hash,
    status: r.status,
    reported: reported.asset === undefined ? null : (reported as ReportedFields),
    observed: r.observed === null ? null : (JSON.parse(r.observed) as ObservedFields),
    differences: JSON.parse(r.differences) as Difference[],
    note: r.note,
    blockNumber: r.block_number === null ? null : Number(r.block_number),
    blockHash: r.block_hash,
    occurredAt: Number(r.occurred_at),
    graceFrom: Number(r.grace_from),
    checkedAt: r.checked_at === null ? null : Number(r.checked_at),
    nextCheckAt: Number(r.next_check_at),
    createdAt: Number(r.created_at),
  };
}

export const recordSettlementId = (recordId: string) => `r:${recordId}`;
export const transferSettlementId = (network: string, txHash: string, logIndex: number) => `t:${network}:${txHash}:${logIndex}`;

/** A record taken in: pending its first check, or unverifiable at once. */
export interface NewSettlement {
  teamId: string;
  recordId: string;
  agentId: string;
  network: string;
  txHash: string;
  status: 'pending' | 'unverifiable';
  reported: ReportedFields;
  note: string | null;
  occurredAt: number;
  /** When the record was received: the grace period counts from it. */
  receivedAt: number;
}

/** Takes records in; one already in (a record read twice) is left as it is. Returns how many were new. */
export async function insertSettlements(sql: Sql, rows: readonly NewSettlement[], now: number): Promise<number> {
  let added = 0;
  for (const r of rows) {
    added += await sql.run(
      `INSERT INTO settlements (${COLUMNS}, mirrored) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, '[]', ?, NULL, NULL, ?, ?, ?, ?, ?, 0) ON CONFLICT DO NOTHING`,
      [recordSettlementId(r.recordId), r.teamId, r.recordId, r.agentId, r.network, r.txHash, r.status, JSON.stringify(r.reported), r.note, r.occurredAt, r.receivedAt, r.status === 'unverifiable' ? now : null, now, now],
    );
  }
  return added;
}

/** An unreported transfer's entry; none is added twice. */
export async function insertUnreported(sql: Sql, t: Transfer, amount: string | null, now: number): Promise<boolean> {
  const observed: ObservedFields = { amount, amount_raw: t.amountRaw, token: t.token, payer: t.payer, payee: t.payee, block_number: t.blockNumber, block_hash: t.blockHash, log_index: t.logIndex, receipt: 'success' };
  return (
    (await sql.run(
      `INSERT INTO settlements (${COLUMNS}, mirrored) VALUES (?, ?, NULL, ?, ?, ?, 'unreported', '{}', ?, '[]', NULL, ?, ?, ?, ?, ?, ?, ?, 0) ON CONFLICT DO NOTHING`,
      [transferSettlementId(t.network, t.txHash, t.logIndex), t.teamId, t.agentId, t.network, t.txHash, JSON.stringify(observed), t.blockNumber, t.blockHash, t.seenAt, t.seenAt, now, now, now],
    )) === 1
  );
}

/** A new state of a settlement: the verifier's finding. */
export interface Finding {
  status: SettlementStatus;
  observed: ObservedFields | null;
  differences: Difference[];
  note: string | null;
  blockNumber: number | null;
  blockHash: string | null;
  graceFrom?: number;
  nextCheckAt: number;
}

/** Writes a finding, unless the row changed since it was read (`was`: its status and block hash then); true when written. */
export async function writeFinding(sql: Sql, was: Pick<Settlement, 'teamId' | 'id' | 'status' | 'blockHash'>, f: Finding, now: number): Promise<boolean> {
  return (
    (await sql.run(
      `UPDATE settlements SET status = ?, observed = ?, differences = ?, note = ?, block_number = ?, block_hash = ?, grace_from = coalesce(?, grace_from),
              checked_at = ?, next_check_at = ?, mirrored = 0
        WHERE team_id = ? AND id = ? AND status = ? AND coalesce(block_hash, '') = ?`,
      [f.status, f.observed === null ? null : JSON.stringify(f.observed), JSON.stringify(f.differences), f.note, f.blockNumber, f.blockHash, f.graceFrom ?? null, now, f.nextCheckAt, was.teamId, was.id, was.status, was.blockHash ?? ''],
    )) === 1
  );
}

/** Teams given a share of one round at most (one look-up each); the others' turn is the next round. */
export const TEAMS_PER_ROUND = 50;

/**
 * Pending settlements of a network due for a check, at most `limit`: first an equal share for each
 * team with pending ones (up to TEAMS_PER_ROUND teams, in team order after `after`, wrapping), so one team's
 * flood does not hold back another team's records; the rest of the round oldest due first.
 * Returns them with the last team that had its share (where the next round starts).
 */
export async function dueSettlements(sql: Sql, network: string, now: number, limit: number, after = ''): Promise<{ due: Settlement[]; lastTeam: string }> {
  const most = Math.min(limit, TEAMS_PER_ROUND);
  let teams = await pendingTeams(sql, network, after, most);
  if (teams.length < most && after !== '') teams = [...teams, ...(await pendingTeams(sql, network, '', most - teams.length)).filter((t) => t <= after)];
  const share = Math.max(1, Math.floor(limit / Math.max(1, teams.length)));
  const due: Row[] = [];
  for (const team of teams) {
    due.push(...(await sql.all<Row>(`SELECT ${COLUMNS} FROM settlements WHERE status = 'pending' AND network = ? AND team_id = ? AND next_check_at <= ? ORDER BY next_check_at LIMIT ?`, [network, team, now, share])));
  }
  if (due.length < limit) {
    const taken = new Set(due.map((r) => `${r.team_id}\n${r.id}`));
    const oldest = await sql.all<Row>(`SELECT ${COLUMNS} FROM settlements WHERE status = 'pending' AND network = ? AND next_check_at <= ? ORDER BY next_check_at LIMIT ?`, [network, now, limit]);
    for (const r of oldest) if (due.length < limit && !taken.has(`${r.team_id}\n${r.id}`)) due.push(r);
  }
  return { due: due.map(toSettlement), lastTeam: teams.length === most ? teams.at(-1)! : '' };
}

/** Up to `n` teams with pending settlements on a network, after `after` in team order: one index look-up each (a loose index scan). */
async function pendingTeams(sql: Sql, network: string, after: string, n: number): Promise<string[]> {
  const next = `SELECT team_id FROM settlements WHERE status = 'pending' AND network = ? AND team_id > %s ORDER BY team_id LIMIT 1`;
  const rows = await sql.all<{ team_id: string | null }>(
    `WITH RECURSIVE t (team_id, k) AS (
       SELECT (${next.replace('%s', '?')}), 1
       UNION ALL
       SELECT (${next.replace('%s', 't.team_id')}), k + 1 FROM t WHERE t.team_id IS NOT NULL AND k < ?
     )
     SELECT team_id FROM t WHERE team_id IS NOT NULL`,
    [network, after, network, n],
  );
  return rows.map((r) => r.team_id!);
}

/** Checked settlements of a network whose block is at or above `fromBlock`: a reorganisation may still take them away. */
export async function recentSettlements(sql: Sql, network: string, fromBlock: number, limit: number): Promise<Settlement[]> {
  const rows = await sql.all<Row>(
    `SELECT ${COLUMNS} FROM settlements WHERE status IN ('verified', 'mismatch', 'failed') AND network = ? AND block_number >= ? ORDER BY block_number LIMIT ?`,
    [network, fromBlock, limit],
  );
  return rows.map(toSettlement);
}

export async function findSettlement(sql: Sql, teamId: string, id: string): Promise<Settlement | undefined> {
  const row = await sql.get<Row>(`SELECT ${COLUMNS} FROM settlements WHERE team_id = ? AND id = ?`, [teamId, id]);
  return row && toSettlement(row);
}

/** The team's settlements of a transaction. */
export async function settlementsOfTx(sql: Sql, teamId: string, txHash: string): Promise<Settlement[]> {
  const rows = await sql.all<Row>(`SELECT ${COLUMNS} FROM settlements WHERE team_id = ? AND tx_hash = ? ORDER BY id`, [teamId, txHash.toLowerCase()]);
  return rows.map(toSettlement);
}

/** The settlements of these records (missing ones: not taken in). */
export async function settlementsOfRecords(sql: Sql, teamId: string, recordIds: readonly string[]): Promise<Settlement[]> {
  if (recordIds.length === 0) return [];
  const rows = await sql.all<Row>(`SELECT ${COLUMNS} FROM settlements WHERE team_id = ? AND id IN (${recordIds.map(() => '?').join(', ')})`, [teamId, ...recordIds.map(recordSettlementId)]);
  return rows.map(toSettlement);
}

export interface SettlementFilter {
  status?: SettlementStatus;
  agent?: string;
  from?: number;
  to?: number;
}

export interface SettlementCursor {
  occurredAt: number;
  id: string;
}

/** A page of the team's settlements, newest first. */
export async function listSettlements(sql: Sql, teamId: string, filter: SettlementFilter, page: { limit: number; after?: SettlementCursor }): Promise<Settlement[]> {
  const where = ['team_id = ?'];
  const params: unknown[] = [teamId];
  if (filter.status) (where.push('status = ?'), params.push(filter.status));
  if (filter.agent !== undefined) (where.push('agent_id = ?'), params.push(filter.agent));
  if (filter.from !== undefined) (where.push('occurred_at >= ?'), params.push(filter.from));
  if (filter.to !== undefined) (where.push('occurred_at < ?'), params.push(filter.to));
  if (page.after) (where.push('(occurred_at < ? OR (occurred_at = ? AND id < ?))'), params.push(page.after.occurredAt, page.after.occurredAt, page.after.id));
  const rows = await sql.all<Row>(`SELECT ${COLUMNS} FROM settlements WHERE ${where.join(' AND ')} ORDER BY occurred_at DESC, id DESC LIMIT ?`, [...params, page.limit]);
  return rows.map(toSettlement);
}

/** Settlements whose latest state ClickHouse's copy lacks, of every network (unverifiable ones of networks without an RPC too). */
export async function unmirrored(sql: Sql, limit: number): Promise<Settlement[]> {
  const rows = await sql.all<Row>(`SELECT ${COLUMNS} FROM settlements WHERE mirrored = 0 LIMIT ?`, [limit]);
  return rows.map(toSettlement);
}

/** Marks these as copied, each unless it changed since it was read (then it is copied again). Run it in a transaction. */
export async function markMirrored(sql: Sql, rows: readonly Settlement[]): Promise<void> {
  for (const r of rows) await sql.run(`UPDATE settlements SET mirrored = 1 WHERE team_id = ? AND id = ? AND status = ? AND coalesce(checked_at, -1) = ?`, [r.teamId, r.id, r.status, r.checkedAt ?? -1]);
}

/** Per network and status, how many settlements there are (for /metrics). */
export async function statusCounts(sql: Sql): Promise<{ network: string; status: SettlementStatus; n: number }[]> {
  const rows = await sql.all<{ network: string; status: SettlementStatus; n: number | string }>('SELECT network, status, count(*) AS n FROM settlements GROUP BY network, status');
  return rows.map((r) => ({ ...r, n: Number(r.n) }));
}

/** The oldest pending settlement's receipt time on a network (what verification lags by); null when none waits. */
export async function oldestPending(sql: Sql, network: string): Promise<number | null> {
  const row = await sql.get<{ t: number | null }>(`SELECT min(grace_from) AS t FROM settlements WHERE status = 'pending' AND network = ?`, [network]);
  return row?.t === null || row?.t === undefined ? null : Number(row.t);
}

// --- cursors -------------------------------------------------------------------------------------

export async function readCursor(sql: Sql, name: string): Promise<number | undefined> {
  const row = await sql.get<{ position: number }>('SELECT position FROM settlement_cursors WHERE name = ?', [name]);
  return row === undefined ? undefined : Number(row.position);
}

export async function writeCursor(sql: Sql, name: string, position: number, now: number): Promise<void> {
  await sql.run(
    'INSERT INTO settlement_cursors (name, position, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at',
    [name, position, now],
  );
}

// --- transfers from wallets ----------------------------------------------------------------------

export interface Transfer {
  teamId: string;
  network: string;
  txHash: string;
  logIndex: number;
  agentId: string;
  token: string;
  payer: string;
  payee: string;
  amountRaw: string;
  blockNumber: number;
  blockHash: string;
  seenAt: number;
}

export async function insertTransfer(sql: Sql, t: Transfer): Promise<void> {
  await sql.run(
    `INSERT INTO settlement_transfers (team_id, network, tx_hash, log_index, agent_id, token, payer, payee, amount_raw, block_number, block_hash, seen_at, state)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'waiting') ON CONFLICT DO NOTHING`,
    [t.teamId, t.network, t.txHash, t.logIndex, t.agentId, t.token, t.payer, t.payee, t.amountRaw, t.blockNumber, t.blockHash, t.seenAt],
  );
}

/** Transfers of a network still waiting for a record, with the record that claims each by now (null: none yet). */
export async function waitingTransfers(sql: Sql, network: string, limit: number): Promise<(Transfer & { claimedBy: string | null })[]> {
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT t.team_id, t.network, t.tx_hash, t.log_index, t.agent_id, t.token, t.payer, t.payee, t.amount_raw, t.block_number, t.block_hash, t.seen_at,
            (SELECT min(s.record_id) FROM settlements s WHERE s.network = t.network AND s.tx_hash = t.tx_hash AND s.team_id = t.team_id AND s.record_id IS NOT NULL) AS claimed_by
       FROM settlement_transfers t WHERE t.network = ? AND t.state = 'waiting' ORDER BY t.seen_at LIMIT ?`,
    [network, limit],
  );
  return rows.map((r) => ({
    teamId: String(r.team_id), network: String(r.network), txHash: String(r.tx_hash), logIndex: Number(r.log_index), agentId: String(r.agent_id),
    token: String(r.token), payer: String(r.payer), payee: String(r.payee), amountRaw: String(r.amount_raw), blockNumber: Number(r.block_number),
    blockHash: String(r.block_hash), seenAt: Number(r.seen_at), claimedBy: r.claimed_by === null ? null : String(r.claimed_by),
  }));
}

/** Moves a waiting transfer on; false when another writer did first. */
export async function settleTransfer(sql: Sql, t: Pick<Transfer, 'teamId' | 'network' | 'txHash' | 'logIndex'>, state: 'claimed' | 'unreported', recordId: string | null): Promise<boolean> {
  return (
    (await sql.run(`UPDATE settlement_transfers SET state = ?, record_id = ? WHERE team_id = ? AND network = ? AND tx_hash = ? AND log_index = ? AND state = 'waiting'`, [
      state, recordId, t.teamId, t.network, t.txHash, t.logIndex,
    ])) === 1
  );
}

/** Unreported entries a record claims now: each is returned once (its entry then says which record). */
export async function claimedUnreported(sql: Sql, network: string, limit: number): Promise<{ teamId: string; id: string; agentId: string; txHash: string; recordId: string }[]> {
  return sql.all(
    `SELECT u.team_id AS "teamId", u.id, u.agent_id AS "agentId", u.tx_hash AS "txHash", min(s.record_id) AS "recordId"
       FROM settlements u JOIN settlements s ON s.network = u.network AND s.tx_hash = u.tx_hash AND s.team_id = u.team_id AND s.record_id IS NOT NULL
      WHERE u.network = ? AND u.status = 'unreported' AND u.note IS NULL
      GROUP BY u.team_id, u.id, u.agent_id, u.tx_hash LIMIT ?`,
    [network, limit],
  );
}

export async function noteSettlement(sql: Sql, teamId: string, id: string, note: string, now: number): Promise<void> {
  await sql.run('UPDATE settlements SET note = ?, checked_at = ?, mirrored = 0 WHERE team_id = ? AND id = ?', [note, now, teamId, id]);
}
