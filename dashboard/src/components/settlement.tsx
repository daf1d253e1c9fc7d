/**
 * A record's standing against the chain (docs/reconciliation.md), as the Settlements and Records
 * pages show it: a status badge with what it means, what differs for a mismatch, amounts per token
 * (as the API's decimal strings), and long hashes shortened with the whole in the tooltip.
 */
import { api } from '../api';
import type { AuditRecord, Settlement, SettlementDifference, SettlementStatus } from '../types';
import { Money } from './money';
import { useLoad } from './panel';

/** The API's statuses, and the two the dashboard adds for a record with no entry: no hash, or not taken in yet. */
export type ShownStatus = SettlementStatus | 'unreported_settlement' | 'waiting';

export const SETTLEMENT_STATUSES: readonly SettlementStatus[] = ['verified', 'mismatch', 'failed', 'not_found', 'pending', 'unverifiable', 'unreported'];

const LABELS: Partial<Record<ShownStatus, string>> = { not_found: 'not found', unreported_settlement: 'no tx' };

export const SETTLEMENT_MEANING: Record<ShownStatus, string> = {
  verified: 'The transaction moved what the record says.',
  mismatch: 'The transaction moved something else than the record says.',
  failed: 'The transaction reverted: nothing was paid.',
  not_found: 'The chain has no such transaction after the grace period.',
  pending: 'Not checked yet, or waiting for confirmations.',
  unverifiable: 'Cannot be checked: no RPC for its network, or its token or decimals unknown.',
  unreported: 'A transfer from an agent’s registered wallet that no record claims.',
  unreported_settlement: 'A payment recorded without a transaction hash: there is nothing to check it against.',
  waiting: 'It has a transaction hash but is not taken in yet: checked within a poll once stored (never while reconciliation is off).',
};

export const statusLabel = (status: ShownStatus) => LABELS[status] ?? status;

export function SettlementBadge({ status, title }: { status: ShownStatus; title?: string }) {
  return (
    <span class={`badge settlement-${status}`} data-settlement-status={status} title={title ?? SETTLEMENT_MEANING[status]}>
      {statusLabel(status)}
    </span>
  );
}

/** "amount: reported 0.02, observed 0.01; payee: …": what differs, in one line (a tooltip). */
export const differencesText = (differences: readonly SettlementDifference[]) => differences.map((d) => `${d.field}: reported ${d.reported}, observed ${d.observed}`).join('; ');

/** What a settlement's badge says on hover: what differs, else its note, else what the status means. */
export function settlementTitle(s: Settlement): string {
  if (s.differences.length) return `${SETTLEMENT_MEANING[s.status]} ${differencesText(s.differences)}`;
  return s.note ?? SETTLEMENT_MEANING[s.status];
}

/** Each field that differs, both sides as the API wrote them (amounts exact, addresses whole). */
export function Differences({ differences }: { differences: readonly SettlementDifference[] }) {
  return (
    <ul class="differences">
      {differences.map((d) => (
        <li key={d.field} data-difference={d.field}>
          <strong>{d.field}</strong>: reported <code data-reported>{d.reported}</code>, observed <code data-observed>{d.observed}</code>
        </li>
      ))}
    </ul>
  );
}

/** A hash or address as 0x1234…abcd, whole in the tooltip and data-full; anything else as it is. */
export function ShortHex({ value }: { value: string | null | undefined }) {
  if (!value) return <span class="muted">–</span>;
  if (!/^0x[0-9a-fA-F]{16,}$/.test(value)) return <span>{value}</span>;
  return (
    <code class="hex" title={value} data-full={value}>
      {value.slice(0, 6)}…{value.slice(-4)}
    </code>
  );
}

/**
 * An amount of a token: in its units when the API gave them (rounded, exact in the tooltip), else
 * in its smallest units, said so (its decimals were not known).
 */
export function TokenAmount({ amount, raw, token }: { amount: string | null | undefined; raw?: string | null; token: string | null | undefined }) {
  if (amount === null || amount === undefined) {
    if (!raw) return <span class="muted">–</span>;
    return (
      <span class="token-amount" data-amount-raw={raw}>
        {raw} smallest units of <ShortHex value={token} />
      </span>
    );
  }
  return (
    <span class="token-amount" data-amount={amount}>
      <Money value={amount} denomination={token ? { kind: 'asset', asset: token } : undefined} bare /> <ShortHex value={token} />
    </span>
  );
}

/** The most ids POST /records/settlements takes at once. */
const MAX_IDS = 500;

/**
 * The settlements of these records, by record id (POST /records/settlements; records without a
 * hash have none and are not asked for): one request per 500, so one for a page of the list.
 */
export function useRecordSettlements(records: readonly Pick<AuditRecord, 'id' | 'tx_hash'>[]): Map<string, Settlement> | undefined {
  const ids = records.filter((r) => r.tx_hash).map((r) => r.id);
  const load = useLoad(async (signal) => {
    const chunks: string[][] = [];
    for (let i = 0; i < ids.length; i += MAX_IDS) chunks.push(ids.slice(i, i + MAX_IDS));
    const answers = await Promise.all(chunks.map((chunk) => api<{ data: Settlement[] }>('POST', '/records/settlements', { body: { ids: chunk }, signal })));
    return answers.flatMap((a) => a.data);
  }, [ids]);
  return load.data && new Map(load.data.map((s) => [s.record_id!, s]));
}

/** Whether a record paid something: an amount above 0, not blocked (what the summary counts as a payment). */
const isPayment = (r: Pick<AuditRecord, 'amount' | 'policy_evaluation'>) => /[1-9]/.test(r.amount) && r.policy_evaluation !== 'blocked';

/** A record's settlement in a cell: its status (what differs on hover), "no tx" without a hash, "waiting" before it is taken in. */
export function RecordSettlementStatus({ record, settlement }: { record: Pick<AuditRecord, 'amount' | 'policy_evaluation' | 'tx_hash'>; settlement: Settlement | undefined }) {
  if (!record.tx_hash) return isPayment(record) ? <SettlementBadge status="unreported_settlement" /> : <span class="muted" title="Nothing was paid: nothing to check">–</span>;
  if (!settlement) return <SettlementBadge status="waiting" />;
  return <SettlementBadge status={settlement.status} title={settlementTitle(settlement)} />;
}
