/**
 * Payments nobody reported: the known tokens' Transfer logs from agents' registered wallets,
 * followed past the confirmation depth by a cursor per network (kept in the registry, so a restart
 * goes on where it stopped), in block ranges the node accepts. A transfer no record claims within
 * the grace period is an unreported payment.
 */
import { rawToAmount } from '../domain/assets.js';
import { addressTopic, shownAmount, TRANSFER_TOPIC } from '../domain/settlement.js';
import type { Database, Sql } from '../stores/sql.js';
import { walletsOn } from '../agents/wallets.js';
import { insertTransfer, readCursor, settleTransfer, waitingTransfers, writeCursor, claimedUnreported, noteSettlement, insertUnreported, type Transfer } from './repository.js';
import { RpcCallError, type JsonRpc } from './rpc.js';
import { transfersOf } from './verifier.js';

/** Ranges asked per cycle at most: a long way behind is caught up over several. */
const RANGES_PER_CYCLE = 20;
/** Addresses per eth_getLogs topic list: nodes limit its length. */
const WALLETS_PER_CALL = 100;

export interface WatcherDeps {
  db: Database;
  rpc: JsonRpc;
  confirmations: number;
  graceMs: number;
  logRangeBlocks: number;
  /** Token contracts whose transfers are followed on this network (lower case). */
  tokens(): Promise<string[]>;
  /** The decimals of a transfer's token for its team, when known. */
  decimalsOf(t: Transfer): Promise<number | undefined>;
  /** Unix ms up to which records are taken in: a transfer is unreported only once records of its grace period could claim it. */
  intakeReached(): Promise<number>;
  /** In the transaction that records an unreported payment: its alert, and the suspension a policy asks for. */
  unreported(sql: Sql, t: Transfer, amount: string, now: number): Promise<void>;
}

export const walletCursor = (network: string) => `wallets:${network}`;

export class WalletWatcher {
  /** Blocks per eth_getLogs; halved when the node refuses a range as too large. */
  private range: number;

  constructor(private readonly deps: WatcherDeps) {
    this.range = deps.logRangeBlocks;
  }

  /** Follows the wallets up to the confirmed head; then decides the transfers whose grace is over. Returns the cursor. */
  async scan(head: number, now = Date.now()): Promise<number> {
    const { db, rpc } = this.deps;
    const name = walletCursor(rpc.network);
    const safe = head - this.deps.confirmations + 1;
    const wallets = await walletsOn(db, rpc.network);
    const stored = await readCursor(db, name);
    if (stored === undefined || wallets.length === 0) {
      // Nothing followed before (or nothing to follow): wallets are followed from the next block on.
      const at = Math.max(stored ?? safe, safe);
      if (at !== stored) await writeCursor(db, name, at, now);
      return at;
    }
    let cursor = stored;
    const tokens = await this.deps.tokens();
    const holders = new Map<string, { teamId: string; agentId: string }[]>();
    for (const w of wallets) holders.set(w.address, [...(holders.get(w.address) ?? []), { teamId: w.teamId, agentId: w.agentId }]);
    const addresses = [...holders.keys()];
    for (let i = 0; i < RANGES_PER_CYCLE && cursor < safe && tokens.length > 0; i++) {
      const to = Math.min(safe, cursor + this.range);
      const logs = await this.logs(cursor + 1, to, tokens, addresses);
      if (logs === 'too_large') continue;
      await db.transaction(async (sql) => {
        for (const log of logs) {
          for (const t of transfersOf({ logs: [log] })) {
            for (const h of holders.get(t.from) ?? []) {
              await insertTransfer(sql, {
                teamId: h.teamId, agentId: h.agentId, network: rpc.network, txHash: log.transactionHash.toLowerCase(), logIndex: t.logIndex, token: t.token,
                payer: t.from, payee: t.to, amountRaw: t.amountRaw, blockNumber: Number.parseInt(log.blockNumber, 16), blockHash: log.blockHash.toLowerCase(), seenAt: now,
              });
            }
          }
        }
        await writeCursor(sql, name, to, now);
      });
      cursor = to;
    }
    await this.decide(now);
    return cursor;
  }

  /** The Transfer logs of these tokens from these wallets in [from, to]; 'too_large' when the node refused the range (then halved). */
  private async logs(from: number, to: number, tokens: string[], addresses: string[]): Promise<LogEntry[] | 'too_large'> {
    const calls = [];
    for (let i = 0; i < addresses.length; i += WALLETS_PER_CALL) {
      const topics = [TRANSFER_TOPIC, addresses.slice(i, i + WALLETS_PER_CALL).map(addressTopic)];
      calls.push({ method: 'eth_getLogs', params: [{ fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}`, address: tokens, topics }] });
    }
    const answers = await this.deps.rpc.batch<LogEntry[]>(calls);
    const refused = answers.find((a): a is RpcCallError => a instanceof RpcCallError);
    if (refused) {
      if (this.range > 1) {
        this.range = Math.max(1, Math.floor(this.range / 2));
        return 'too_large';
      }
      throw refused;
    }
    return (answers as LogEntry[][]).flat().filter((l) => !l.removed);
  }

  /** Waiting transfers: claimed by a record by now, or unreported once their grace is over. Unreported ones a record claims later say so. */
  private async decide(now: number): Promise<void> {
    const { db, rpc } = this.deps;
    const reached = await this.deps.intakeReached();
    const waiting = await waitingTransfers(db, rpc.network, 1_000);
    const claimed = waiting.filter((t) => t.claimedBy !== null);
    if (claimed.length > 0) await db.transaction(async (sql) => void (await Promise.all(claimed.map((t) => settleTransfer(sql, t, 'claimed', t.claimedBy)))));
    for (const t of waiting) {
      if (t.claimedBy !== null) {
        continue;
      } else if (now - t.seenAt >= this.deps.graceMs && reached >= t.seenAt + this.deps.graceMs) {
        // Decided only once the records of the grace period are taken in: a loader behind raises nothing false.
        const decimals = await this.deps.decimalsOf(t);
        await db.transaction(async (sql) => {
          if (!(await settleTransfer(sql, t, 'unreported', null))) return;
          if (await insertUnreported(sql, t, decimals === undefined ? null : rawToAmount(t.amountRaw, decimals), now)) await this.deps.unreported(sql, t, shownAmount(t.amountRaw, decimals), now);
        });
      }
    }
    for (const late of await claimedUnreported(db, rpc.network, 1_000)) {
      await noteSettlement(db, late.teamId, late.id, `record ${late.recordId} claimed this transfer after it was reported unreported`, now);
    }
  }
}

interface LogEntry {
  address: string;
  topics: string[];
  data: string;
  logIndex: string;
  blockNumber: string;
  blockHash: string;
  transactionHash: string;
  removed?: boolean;
}
