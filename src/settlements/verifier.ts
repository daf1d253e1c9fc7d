/**
 * One network's record checks: each pending settlement's receipt and the Transfer logs in it,
 * compared with what the record reported; and checked ones still within the reorganisation depth
 * looked at again, so a transaction that left its block goes back to pending (then not_found).
 */
import { compareWithTransfers, shownAmount, TRANSFER_TOPIC, topicAddress, type TransferLog } from '../domain/settlement.js';
import type { Database } from '../stores/sql.js';
import type { SettlementAlertKind } from './alerts.js';
import { dueSettlements, recentSettlements, writeFinding, type Finding, type ObservedFields, type Settlement } from './repository.js';
import { RpcCallError, type JsonRpc } from './rpc.js';

/** Settlements looked at per round. */
export const ROUND = 500;

export interface Receipt {
  status: string;
  blockNumber: string;
  blockHash: string;
  logs: { address: string; topics: string[]; data: string; logIndex: string }[];
}

export interface NetworkSettings {
  confirmations: number;
  graceMs: number;
  pollMs: number;
  reorgDepth: number;
}

export interface VerifierDeps {
  db: Database;
  rpc: JsonRpc;
  settings: NetworkSettings;
  /** A token's decimals for the team (to show amounts), when known. */
  decimalsOf(teamId: string, token: string): Promise<number | undefined>;
  /** Called in the finding's transaction when it is one that alerts. */
  alert(sql: Parameters<Parameters<Database['transaction']>[0]>[0], s: Settlement, kind: SettlementAlertKind, finding: Finding, now: number): Promise<void>;
}

const hexNumber = (hex: string): number => Number.parseInt(hex, 16);

/** The ERC-20 Transfer logs of a receipt. */
export function transfersOf(receipt: Pick<Receipt, 'logs'>): TransferLog[] {
  return receipt.logs
    .filter((l) => l.topics.length === 3 && l.topics[0]?.toLowerCase() === TRANSFER_TOPIC && /^0x[0-9a-fA-F]{1,64}$/.test(l.data))
    .map((l) => ({ token: l.address.toLowerCase(), from: topicAddress(l.topics[1]!), to: topicAddress(l.topics[2]!), amountRaw: BigInt(l.data).toString(), logIndex: hexNumber(l.logIndex) }));
}

/** A settlement and what a check found (nothing to write: no finding). */
interface Judged {
  s: Settlement;
  finding?: Finding;
  alerts?: boolean;
}

export class Verifier {
  /** Where the next round's turns of teams start (round-robin: see dueSettlements). */
  private turnAfter = '';

  constructor(private readonly deps: VerifierDeps) {}

  /** The chain's head block. */
  async head(): Promise<number> {
    return hexNumber(await this.deps.rpc.call<string>('eth_blockNumber', []));
  }

  /** Checks the due settlements; returns how many were looked at. Throws RpcUnavailable when the node is (nothing is then written). */
  async checkDue(head: number, now = Date.now(), round = ROUND): Promise<number> {
    const { due, lastTeam } = await dueSettlements(this.deps.db, this.deps.rpc.network, now, round, this.turnAfter);
    this.turnAfter = lastTeam;
    if (due.length === 0) return 0;
    const receipts = await this.receipts(due.map((s) => s.txHash));
    const found: Judged[] = [];
    for (const s of due) found.push(await this.judge(s, receipts.get(s.txHash), head, now));
    await this.write(found, now);
    return due.length;
  }

  /** Looks again at checked settlements within the reorganisation depth; returns how many had left their block. */
  async recheckRecent(head: number, now = Date.now()): Promise<number> {
    const recent = await recentSettlements(this.deps.db, this.deps.rpc.network, Math.max(0, head - this.deps.settings.reorgDepth + 1), ROUND * 4);
    if (recent.length === 0) return 0;
    const numbers = [...new Set(recent.map((s) => s.blockNumber!))];
    const blocks = await this.deps.rpc.batch<{ hash: string } | null>(numbers.map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, false] })));
    const hashAt = new Map<number, string | null>();
    numbers.forEach((n, i) => {
      const block = blocks[i];
      if (block instanceof RpcCallError) return; // unknown this round: looked at next time
      hashAt.set(n, block?.hash?.toLowerCase() ?? null);
    });
    const moved = recent.filter((s) => hashAt.has(s.blockNumber!) && hashAt.get(s.blockNumber!) !== s.blockHash);
    if (moved.length === 0) return 0;
    const receipts = await this.receipts(moved.map((s) => s.txHash));
    const found: Judged[] = [];
    for (const s of moved) found.push(await this.judge(s, receipts.get(s.txHash), head, now, true));
    await this.write(found, now);
    return moved.length;
  }

  /** Receipts by hash: a receipt, null (the node has no such transaction) or an error (unknown this round). */
  private async receipts(hashes: readonly string[]): Promise<Map<string, Receipt | null | RpcCallError>> {
    const distinct = [...new Set(hashes)];
    const answers = await this.deps.rpc.batch<Receipt | null>(distinct.map((h) => ({ method: 'eth_getTransactionReceipt', params: [h] })));
    return new Map(distinct.map((h, i) => [h, answers[i] ?? null]));
  }

  /** The findings of a round in one transaction (one disk flush), each with its alert. */
  private async write(found: readonly Judged[], now: number): Promise<void> {
    const writes = found.filter((j): j is Required<Judged> => j.finding !== undefined);
    if (writes.length === 0) return;
    await this.deps.db.transaction(async (sql) => {
      for (const { s, finding, alerts } of writes) {
        const written = await writeFinding(sql, s, finding, now);
        if (written && alerts) await this.deps.alert(sql, s, finding.status as SettlementAlertKind, finding, now);
      }
    });
  }

  private async judge(s: Settlement, receipt: Receipt | null | RpcCallError | undefined, head: number, now: number, reorganised = false): Promise<Judged> {
    const { settings } = this.deps;
    const later = now + settings.pollMs;
    let finding: Finding;
    if (receipt instanceof RpcCallError || receipt === undefined) {
      // The node refused this one call (a malformed hash is answered so): said, and tried again.
      const note = receipt instanceof RpcCallError ? `the node refused the receipt: ${receipt.message}` : 'no answer for its receipt';
      finding = { status: 'pending', observed: s.observed, differences: [], note, blockNumber: s.blockNumber, blockHash: s.blockHash, nextCheckAt: later };
      if (s.status !== 'pending') return { s };
    } else if (receipt === null) {
      // Seen in a block before, gone now: a reorganisation took it away.
      const left = reorganised || s.blockHash !== null;
      const graceFrom = left ? now : s.graceFrom;
      const note = left
        ? `its block ${s.blockNumber} (${s.blockHash}) was reorganised away; waiting for the transaction to be mined again`
        : s.note?.startsWith('its block') ? s.note : 'not on chain yet';
      if (now - graceFrom >= settings.graceMs) {
        finding = { status: 'not_found', observed: null, differences: [], note: `no such transaction after ${Math.round(settings.graceMs / 1000)} s${s.note?.startsWith('its block') ? `; ${s.note}` : ''}`, blockNumber: null, blockHash: null, nextCheckAt: later };
      } else {
        finding = { status: 'pending', observed: null, differences: [], note, blockNumber: null, blockHash: null, graceFrom: left ? now : undefined, nextCheckAt: later };
      }
    } else {
      const blockNumber = hexNumber(receipt.blockNumber);
      const blockHash = receipt.blockHash.toLowerCase();
      const confirmations = head - blockNumber + 1;
      const reverted = hexNumber(receipt.status) === 0;
      const base: ObservedFields = { amount: null, amount_raw: null, token: null, payer: null, payee: null, block_number: blockNumber, block_hash: blockHash, log_index: null, receipt: reverted ? 'reverted' : 'success' };
      if (confirmations < settings.confirmations) {
        finding = { status: 'pending', observed: base, differences: [], note: `${Math.max(0, confirmations)} of ${settings.confirmations} confirmations`, blockNumber, blockHash, nextCheckAt: later };
      } else if (reverted) {
        finding = { status: 'failed', observed: base, differences: [], note: `the transaction reverted in block ${blockNumber}`, blockNumber, blockHash, nextCheckAt: later };
      } else {
        finding = await this.compare(s, receipt, base, later);
      }
    }
    const kind = finding.status === 'mismatch' || finding.status === 'failed' || finding.status === 'not_found' ? finding.status : undefined;
    // Unchanged: only the next check moves (a pending one waiting for blocks), without an alert.
    const changed = finding.status !== s.status || finding.blockHash !== s.blockHash || JSON.stringify(finding.differences) !== JSON.stringify(s.differences) || finding.note !== s.note;
    return { s, finding, alerts: changed && kind !== undefined };
  }

  private async compare(s: Settlement, receipt: Receipt, base: ObservedFields, later: number): Promise<Finding> {
    const reported = s.reported!;
    const transfers = transfersOf(receipt);
    const decimals = new Map<string, number | undefined>();
    for (const t of new Set([reported.token!, ...transfers.map((t) => t.token)])) decimals.set(t, await this.deps.decimalsOf(s.teamId, t));
    const { transfer, differences } = compareWithTransfers(
      { asset: reported.asset, token: reported.token!, units: reported.amount_raw === null ? undefined : BigInt(reported.amount_raw), amount: reported.amount ?? reported.amount_raw ?? '', payer: reported.payer ?? '', payee: reported.payee ?? '' },
      transfers,
      (token) => decimals.get(token),
    );
    const observed: ObservedFields = transfer
      ? { ...base, amount: decimals.get(transfer.token) === undefined ? null : shownAmount(transfer.amountRaw, decimals.get(transfer.token)), amount_raw: transfer.amountRaw, token: transfer.token, payer: transfer.from, payee: transfer.to, log_index: transfer.logIndex }
      : base;
    const note = transfer ? null : 'the transaction moved no ERC-20 token';
    return { status: differences.length === 0 ? 'verified' : 'mismatch', observed, differences, note, blockNumber: base.block_number, blockHash: base.block_hash, nextCheckAt: later };
  }
}
