/**
 * Takes records with a transaction hash into the settlements, from ClickHouse, in the order of the
 * ingest log (log_pos, which the loader's min-max index on events serves), never on the
 * acknowledging path. Only what the loader has surely stored is read: positions up to its load
 * frontier, below which nothing can still arrive.
 */
import { amountToUnits } from '../domain/settlement.js';
import { isEvmAddress, tokenContract } from '../domain/tokens.js';
import type { LoadFrontier } from '../ingest/freshness.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { Database } from '../stores/sql.js';
import { insertSettlements, readCursor, writeCursor, type NewSettlement, type ReportedFields } from './repository.js';

/** The intake's lease, and its cursor of time: every record committed before it (Unix µs) is taken in. */
export const RECORDS_CURSOR = 'records';
/** The intake's cursor of log positions: every record at or below it is taken in. */
export const RECORDS_POS_CURSOR = 'records_pos';

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
  pos: string;
}

export interface IntakeDeps {
  db: Database;
  events: EventStore;
  /** Networks with an RPC. */
  networks: ReadonlySet<string>;
  /** A team's decimals of an asset (its rates, ASSET_DECIMALS, the built-in table). */
  decimalsOf(teamId: string, asset: string): Promise<number | undefined>;
  /** The loader's frontier now. */
  loadFrontier(now: number): Promise<LoadFrontier>;
}

/** How much one call takes in: pages of rows. */
export interface IntakeBudget {
  pages: number;
  /** Rows of a page at most; a page covers as many log positions (one per record), so what a query reads stays bounded. */
  pageRows: number;
}

/** Takes in what was loaded since the cursor; returns how many records were new. */
export async function takeIn(deps: IntakeDeps, now = Date.now(), budget: IntakeBudget = { pages: 20, pageRows: 5_000 }): Promise<number> {
  const frontier = await deps.loadFrontier(now);
  let cursor = (await readCursor(deps.db, RECORDS_POS_CURSOR)) ?? 0;
  let added = 0;
  for (let page = 0; page < budget.pages && cursor < frontier.pos; page++) {
    const to = Math.min(cursor + budget.pageRows, frontier.pos);
    const rows = await deps.events.query<RecordRow>(
      `SELECT team_id, id, agent_id, network, lower(assumeNotNull(tx_hash)) AS tx_hash, asset, toString(amount) AS amount, amount_raw,
              payer_address, payee_address, toString(toUnixTimestamp64Milli(event_time)) AS event_ms,
              toString(toUnixTimestamp64Milli(received_at)) AS received_ms, toString(log_pos) AS pos
         FROM events
        WHERE log_pos > {from:UInt64} AND log_pos <= {to:UInt64} AND tx_hash IS NOT NULL AND tx_hash != ''
        ORDER BY log_pos LIMIT {n:UInt32}`,
      { from: cursor, to, n: budget.pageRows },
    );
    if (rows.length === 0) {
      // Nothing in the window (a quiet hour, or a first run): on to the next record, wherever it is.
      const [found] = await deps.events.query<{ pos: string }>(
        `SELECT toString(min(log_pos)) AS pos FROM events WHERE log_pos > {from:UInt64} AND log_pos <= {to:UInt64} AND tx_hash IS NOT NULL AND tx_hash != ''`,
        { from: to, to: frontier.pos },
      );
      cursor = found && found.pos !== '0' ? Number(found.pos) - 1 : frontier.pos;
      await writeCursor(deps.db, RECORDS_POS_CURSOR, cursor, now);
      continue;
    }
    const taken: NewSettlement[] = [];
    for (const row of rows) taken.push(await settlementOf(deps, row));
    // Positions are unique: a full page ends at its last row, a page short of full at the window's end.
    const next = rows.length === budget.pageRows ? Number(rows.at(-1)!.pos) : to;
    await deps.db.transaction(async (sql) => {
      added += await insertSettlements(sql, taken, now);
      await writeCursor(sql, RECORDS_POS_CURSOR, next, now);
    });
    cursor = next;
  }
  // Caught up: what the watcher of wallets waits for (every record of a transfer's grace period taken in).
  if (cursor >= frontier.pos) await writeCursor(deps.db, RECORDS_CURSOR, Math.max(frontier.at * 1000, ((await readCursor(deps.db, RECORDS_CURSOR)) ?? 0)), now);
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
