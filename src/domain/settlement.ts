/**
 * What a record says it paid against what the chain shows (docs/reconciliation.md): the statuses,
 * and the comparison of a record with the ERC-20 transfers of its transaction. Pure: the verifier
 * (src/settlements) fetches, this decides.
 */
import { rawToAmount } from './assets.js';

export type SettlementStatus = 'pending' | 'verified' | 'mismatch' | 'failed' | 'not_found' | 'unverifiable' | 'unreported';
/** Every status a list may be filtered by: unreported_settlement is a record without a hash, counted in the summary. */
export const SETTLEMENT_STATUSES: readonly SettlementStatus[] = ['pending', 'verified', 'mismatch', 'failed', 'not_found', 'unverifiable', 'unreported'];

/** keccak256("Transfer(address,address,uint256)"): ERC-20's Transfer event. */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

export type ComparedField = 'amount' | 'asset' | 'payer' | 'payee';

export interface Difference {
  field: ComparedField;
  reported: string;
  observed: string;
}

/** One ERC-20 Transfer log as the chain shows it. */
export interface TransferLog {
  /** Token contract, lower case. */
  token: string;
  from: string;
  to: string;
  /** uint256 as a decimal string. */
  amountRaw: string;
  logIndex: number;
}

/** What a record reported, put in the token's terms. */
export interface ReportedPayment {
  /** The asset as sent. */
  asset: string;
  /** Its token contract on the record's network (lower case). */
  token: string;
  /** The amount in the token's smallest unit; undefined when it cannot be put in them. */
  units: bigint | undefined;
  /** The amount as the record said it (for messages). */
  amount: string;
  payer: string;
  payee: string;
}

export interface Comparison {
  /** The transfer the record is compared with; undefined when the transaction moved no token. */
  transfer: TransferLog | undefined;
  differences: Difference[];
}

/**
 * Compares a record with its transaction's transfers: the transfer that matches it best (same
 * token, then payee, amount, payer) is the one it claims; every field of it the record named and
 * got wrong is a difference. `decimalsOf` gives a token's decimals, to show amounts as amounts.
 */
export function compareWithTransfers(reported: ReportedPayment, transfers: readonly TransferLog[], decimalsOf: (token: string) => number | undefined): Comparison {
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  const score = (t: TransferLog) =>
    (same(t.token, reported.token) ? 8 : 0) +
    (reported.payee && same(t.to, reported.payee) ? 4 : 0) +
    (reported.units !== undefined && BigInt(t.amountRaw) === reported.units ? 2 : 0) +
    (reported.payer && same(t.from, reported.payer) ? 1 : 0);
  let best: TransferLog | undefined;
  for (const t of transfers) if (!best || score(t) > score(best)) best = t;
  if (!best) return { transfer: undefined, differences: [{ field: 'amount', reported: reported.amount, observed: '0' }] };
  const differences: Difference[] = [];
  if (!same(best.token, reported.token)) differences.push({ field: 'asset', reported: reported.asset, observed: best.token });
  if (reported.units === undefined || BigInt(best.amountRaw) !== reported.units) {
    differences.push({ field: 'amount', reported: reported.amount, observed: shownAmount(best.amountRaw, decimalsOf(best.token)) });
  }
  if (reported.payer && !same(best.from, reported.payer)) differences.push({ field: 'payer', reported: reported.payer, observed: best.from });
  if (reported.payee && !same(best.to, reported.payee)) differences.push({ field: 'payee', reported: reported.payee, observed: best.to });
  return { transfer: best, differences };
}

/** An amount of smallest units as an amount of the token, or the units themselves (named so) when its decimals are unknown. */
export function shownAmount(raw: string, decimals: number | undefined): string {
  return decimals === undefined ? `${raw} (smallest units)` : rawToAmount(raw, decimals);
}

/**
 * A decimal amount in a token's smallest unit, exactly; undefined when it has more decimal places
 * than the token (no whole number of units).
 */
export function amountToUnits(amount: string, decimals: number): bigint | undefined {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(amount.trim());
  if (!match) return undefined;
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > decimals) return undefined;
  return BigInt(match[1]! + fraction.padEnd(decimals, '0'));
}

/** An address from a log topic (32 bytes, the address in the last 20), lower case. */
export const topicAddress = (topic: string): string => `0x${topic.slice(-40).toLowerCase()}`;

/** An address as a log topic, for eth_getLogs filters. */
export const addressTopic = (address: string): string => `0x${address.slice(2).toLowerCase().padStart(64, '0')}`;
