/**
 * Takes records with a transaction hash into the settlements, from ClickHouse, in the order they
 * were stored (ingest_seq), never on the acknowledging path. Only what the loader has surely
 * stored is read: rows older than the oldest unloaded commit, less a margin for the time between a
 * row's ingest_seq and its commit (and clocks of instances that differ a little).
 */
import { amountToUnits } from '../domain/settlement.js';
import { isEvmAddress, tokenContract } from '../domain/tokens.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { Database } from '../stores/sql.js';
import { insertSettlements, readCursor, writeCursor, type NewSettlement, type ReportedFields } from './repository.js';

export const RECORDS_CURSOR = 'records';
/** A row's ingest_seq is taken at most this long before its commit is recorded (and instances' clocks agree within it). */
export const COMMIT_MARGIN_MS = 5_000;

interface RecordRow {
  team_id: string;
  id: string;
  agent_id: string;
  network: string;
  tx_hash: string;
  asset: string;
  amount: string;
  amount_raw: string;
  payer_address: string;
  payee_address: string;
  event_ms: string;
  received_ms: string;
  seq: string;
}

export interface IntakeDeps {
  db: Database;
  events: EventStore;
  /** Networks with an RPC. */
  networks: ReadonlySet<string>;
  /** A team's decimals of an asset (its rates, ASSET_DECIMALS, the built-in table). */
  decimalsOf(teamId: string, asset: string): Promise<number | undefined>;
  /** Unix ms of the oldest commit not loaded into ClickHouse; null when all are. */
  oldestUnloaded(): Promise<number | null>;
  /** COMMIT_MARGIN_MS unless given. */
  commitMarginMs?: number;
}

/** How much one call takes in: pages of rows. */
export interface IntakeBudget {
  pages: number;
  pageRows: number;
  /** ingest_seq microseconds one query covers at most: what it scans stays bounded however far behind the cursor is. */
  windowUs: bigint;
}

/**
 * Adds the min-max index on events.ingest_seq that keeps each intake read to the newest granules,
 * when missing. Only a service that verifies settlements has it: every part of events pays for it.
 */
export async function ensureIntakeIndex(events: EventStore): Promise<void> {
  const [found] = await events.query<{ n: string }>(
    "SELECT count() AS n FROM system.data_skipping_indices WHERE database = currentDatabase() AND table = 'events' AND name = 'seq_minmax'",
  );
  if (found && found.n !== '0') return;
  await events.command('ALTER TABLE events ADD INDEX IF NOT EXISTS seq_minmax ingest_seq TYPE minmax GRANULARITY 1');
  await events.command('ALTER TABLE events MATERIALIZE INDEX seq_minmax');
}

/** Takes in what was stored since the cursor; returns how many records were new. */
export async function takeIn(deps: IntakeDeps, now = Date.now(), budget: IntakeBudget = { pages: 20, pageRows: 5_000, windowUs: 10_000_000n }): Promise<number> {
  const oldest = await deps.oldestUnloaded();
  const horizonUs = BigInt(Math.min(oldest ?? now, now) - (deps.commitMarginMs ?? COMMIT_MARGIN_MS)) * 1000n;
  let cursor = BigInt((await readCursor(deps.db, RECORDS_CURSOR)) ?? 0);
  let added = 0;
  for (let page = 0; page < budget.pages && cursor < horizonUs; page++) {
    const to = cursor + budget.windowUs < horizonUs ? cursor + budget.windowUs : horizonUs;
    const rows = await deps.events.query<RecordRow>(
      `SELECT team_id, id, agent_id, network, lower(assumeNotNull(tx_hash)) AS tx_hash, asset, toString(amount) AS amount, amount_raw,
              payer_address, payee_address, toString(toUnixTimestamp64Milli(event_time)) AS event_ms,
              toString(toUnixTimestamp64Milli(received_at)) AS received_ms, toString(ingest_seq) AS seq
         FROM events
        WHERE ingest_seq > {from:UInt64} AND ingest_seq <= {to:UInt64} AND tx_hash IS NOT NULL AND tx_hash != ''
        ORDER BY ingest_seq LIMIT {n:UInt32}`,
      { from: cursor.toString(), to: to.toString(), n: budget.pageRows },
    );
    if (rows.length === 0) {
      // Nothing in the window (a quiet hour, or a first run): on to the next record, wherever it is.
      const [found] = await deps.events.query<{ seq: string }>(
        `SELECT toString(min(ingest_seq)) AS seq FROM events WHERE ingest_seq > {from:UInt64} AND ingest_seq <= {to:UInt64} AND tx_hash IS NOT NULL AND tx_hash != ''`,
        { from: to.toString(), to: horizonUs.toString() },
      );
      const nextSeq = found && found.seq !== '0' ? BigInt(found.seq) - 1n : horizonUs;
      await writeCursor(deps.db, RECORDS_CURSOR, Number(nextSeq), now);
      cursor = nextSeq;
      continue;
    }
    const taken: NewSettlement[] = [];
    for (const row of rows) taken.push(await settlementOf(deps, row));
    // A full page may end inside a run of equal ingest_seq (two instances' clocks): its last one is read again.
    const next = rows.length === budget.pageRows ? BigInt(rows.at(-1)!.seq) - 1n : to;
    await deps.db.transaction(async (sql) => {
      added += await insertSettlements(sql, taken, now);
      await writeCursor(sql, RECORDS_CURSOR, Number(next > cursor ? next : cursor + 1n), now);
    });
    cursor = next > cursor ? next : cursor + 1n;
  }
  return added;
}

/** A record as a settlement to check, or one that cannot be checked (and why). */
async function settlementOf(deps: IntakeDeps, row: RecordRow): Promise<NewSettlement> {
  const token = row.network ? tokenContract(row.network, row.asset) : undefined;
  const decimals = token ? await deps.decimalsOf(row.team_id, isEvmAddress(row.asset) ? token : row.asset) : undefined;
  // The SDK sends amount_raw "0" beside a real amount: the amount and the token's decimals come first.
  const units = decimals !== undefined ? amountToUnits(row.amount, decimals) : row.amount_raw !== '' && /^\d+$/.test(row.amount_raw) ? BigInt(row.amount_raw) : undefined;
  const reported: ReportedFields = {
    amount: row.amount,
    amount_raw: units === undefined ? null : units.toString(),
    asset: row.asset,
    token: token ?? null,
    // Addresses compare in lower case (EIP-55 case is a checksum, not a difference).
    payer: row.payer_address.toLowerCase() || null,
    payee: row.payee_address.toLowerCase() || null,
  };
  const note = !row.network
    ? 'the record names no network'
    : !deps.networks.has(row.network)
      ? `no RPC is configured for ${row.network} (CHAIN_RPC_URLS)`
      : !token
        ? `no token contract is known for asset "${row.asset}" on ${row.network}: send the token address as asset`
        : units === undefined && decimals === undefined
          ? `the decimals of ${row.asset} are unknown: send amount_raw, or give the asset its decimals (ASSET_DECIMALS, or "decimals" in its rate)`
          : null;
  return {
    teamId: row.team_id,
    recordId: row.id,
    agentId: row.agent_id,
    network: row.network,
    txHash: row.tx_hash,
    status: note === null ? 'pending' : 'unverifiable',
    reported,
    note,
    occurredAt: Number(row.event_ms),
    receivedAt: Number(row.received_ms),
  };
}
