/**
 * Limit kinds as people read them, and what a policy's amounts are in. The kinds mirror
 * src/policies/limits.ts: money kinds carry `amount`, the calls_per_* kinds `count`.
 */
import { denominationOf, inCurrency, type Denomination } from './money';
import type { CallKind, LimitKind, PolicyMatch } from './types';

const CALL_KINDS: ReadonlySet<LimitKind> = new Set<LimitKind>(['calls_per_minute', 'calls_per_hour', 'calls_per_day']);
export const isCallKind = (kind: LimitKind): kind is CallKind => CALL_KINDS.has(kind);

/** The form's names of the kinds, in the order the form offers them. */
export const KIND_LABELS: Record<LimitKind, string> = {
  per_call: 'Per payment',
  per_hour: 'Per hour',
  daily: 'Per day',
  weekly: 'Per week',
  monthly: 'Per month',
  total: 'Total (since it starts)',
  per_endpoint: 'Per endpoint per day',
  calls_per_minute: 'Calls per minute',
  calls_per_hour: 'Calls per hour',
  calls_per_day: 'Calls per day',
};

/** A kind in a few words inside a sentence ("daily 84%", "a monthly budget"). */
export const KIND_WORDS: Record<LimitKind, string> = {
  per_call: 'per payment',
  per_hour: 'hourly',
  daily: 'daily',
  weekly: 'weekly',
  monthly: 'monthly',
  total: 'total',
  per_endpoint: 'daily per endpoint',
  calls_per_minute: 'calls per minute',
  calls_per_hour: 'calls per hour',
  calls_per_day: 'calls per day',
};

/** "200 calls" / "1 call": a count of calls, grouped. */
export function formatCalls(count: string | number): string {
  const text = String(count);
  const grouped = /^\d+$/.test(text) ? text.replace(/\B(?=(\d{3})+(?!\d))/g, ',') : text;
  return `${grouped} ${text === '1' ? 'call' : 'calls'}`;
}

/**
 * What a policy's amounts are in: values in its currency when it has one (policies count in the
 * team's currency by default). One without (made before currencies, or of one asset) counts
 * amounts: of the asset its `match.assets` names, or, from before currencies, of every asset
 * added into one total (mixed, said so, if the team has several).
 */
export function policyDenomination(match: PolicyMatch | null | undefined, team: Denomination, currency?: string | null): Denomination {
  if (currency) return inCurrency(currency);
  if (!match?.assets?.length) return team;
  const known = team.kind === 'asset' ? [team.asset] : team.kind === 'mixed' ? team.assets : [];
  return denominationOf(match.assets.map((a) => known.find((k) => k.toLowerCase() === a.toLowerCase()) ?? a));
}
