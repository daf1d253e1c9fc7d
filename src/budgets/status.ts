/**
 * Budget status (GET /budgets): for each active policy, windowed limit and subject, the current
 * window's spend read whole from the event store (so it equals the sum of the window's records,
 * whatever instance counted them), what open authorizations hold, what is left, and a forecast.
 *
 * The forecast is linear: the window's average rate so far (spent over the time elapsed since it
 * began) carried on to its end. `exhausted_at` is when that rate, on top of what is held, reaches
 * the limit: null when the window ends first (or nothing is spent yet), now when it already has.
 */
import { liveHolds } from '../authorizations/repository.js';
import { Holds } from '../authorizations/holds.js';
import { compilePolicy, type CompiledLimit, type CompiledPolicy, type RecordFacts } from '../evaluation/policies.js';
import { formatObserved, shownEnd } from '../evaluation/breaches.js';
import { readWindowSums, scopeSpecOf, totalKey, type ScopeSpec } from '../evaluation/totals.js';
import { TOTAL_END, type Window } from '../domain/windows.js';
import type { Limit, LimitKind, PolicyScope } from '../policies/limits.js';
import type { PolicyAction } from '../policies/repository.js';
import { activePolicyRows } from '../policies/repository.js';
import type { EventStore } from '../stores/clickhouse.js';
import { perform, type Database } from '../stores/sql.js';
import { formatUnits } from '../domain/money.js';
import { valueUnitsIn } from '../domain/rates.js';
import { readBookFrom } from '../rates/books.js';

export interface BudgetStatus {
  policy_id: string;
  policy_name: string;
  action: PolicyAction;
  kind: LimitKind;
  /** ISO 4217: limit, spent, held and remaining are values in it; null: amounts of the asset as sent. */
  currency: string | null;
  scope: PolicyScope;
  /** null for a pool. */
  agent_id: string | null;
  /** per_endpoint: the pattern; null otherwise. */
  endpoint: string | null;
  /** null for a total (it has no end; it starts at the policy's starts_at). */
  window: { start: string; end: string } | null;
  limit: string;
  spent: string;
  held: string;
  remaining: string;
  /** (spent + held) / limit; null when the limit is 0. */
  used: number | null;
  notify_at: number[];
  forecast: { spent_at_end: string | null; exhausted_at: string | null };
}

/** The most rows one answer lists (agents × limits of team-wide per-agent policies can be many). */
export const MAX_BUDGET_ROWS = 10_000;

const iso = (ms: number) => new Date(ms).toISOString();

/** The linear forecast of a window (see the top of this file); money or counts as the limit reads. */
export function forecastOf(limit: CompiledLimit, spent: bigint, held: bigint, window: Window, now: number): BudgetStatus['forecast'] {
  const end = shownEnd(window);
  // At least a minute elapsed: a window a few milliseconds old says nothing of its rate.
  const elapsed = BigInt(Math.max(now - window.start, 60_000));
  const spentAtEnd = end === null ? null : (spent * BigInt(end - window.start)) / elapsed;
  let exhaustedAt: number | null = null;
  if (spent + held > 0n && spent + held >= limit.amount) exhaustedAt = now;
  else if (spent > 0n) {
    // Past now, since spent + held < limit.
    const at = window.start + Number(((limit.amount - held) * elapsed) / spent);
    if (end === null || at < end) exhaustedAt = at;
  }
  return { spent_at_end: spentAtEnd === null ? null : formatObserved(limit, spentAtEnd), exhausted_at: exhaustedAt === null ? null : iso(exhaustedAt) };
}

/**
 * The status of every budget of a team, closest to its limit first. `events` must hold every
 * record acknowledged before (a fresh read); holds are read from the store now.
 */
export async function budgetStatus(
  db: Database,
  events: Pick<EventStore, 'query'>,
  teamId: string,
  filter: { policyId?: string; agentId?: string },
  now = Date.now(),
): Promise<{ rows: BudgetStatus[]; truncated: boolean }> {
  const { rows: policyRows, agents, holdRows, book } = await db.transaction(async (sql) => {
    const holdRows = await perform(sql, liveHolds(now, { teamId }));
    return {
      rows: await activePolicyRows(sql, teamId),
      agents: (await sql.all<{ external_id: string }>('SELECT external_id FROM agents WHERE team_id = ? ORDER BY external_id', [teamId])).map((a) => a.external_id),
      holdRows,
      // The rates since the oldest hold: each is valued at the instant it was approved, as its decision was (the book's own currency is not used).
      book: await readBookFrom(sql, teamId, holdRows.reduce((from, h) => Math.min(from, h.created_at), now), ''),
    };
  });
  const policies = policyRows
    .filter((p) => filter.policyId === undefined || p.id === filter.policyId)
    .map((p) => ({ action: p.action, notifyAt: p.notifyAt, compiled: compilePolicy({ ...p, limits: JSON.parse(p.limits) as Limit[] }) }));
  const holds = Holds.of(holdRows);
  // Holds in value, each at the rates of its approval.
  const holdValue = (currency: string) => (facts: RecordFacts, amount: bigint, at: number) => valueUnitsIn(book, facts.asset, formatUnits(amount), at, currency) ?? undefined;

  // The windows to read: one per scope (policies sharing a scope share its read).
  type Wanted = { policy: CompiledPolicy; action: PolicyAction; notifyAt: number[]; limit: CompiledLimit; spec: ScopeSpec; window: Window; started: boolean; subjects: (string | null)[] };
  const wanted: Wanted[] = [];
  const reads = new Map<string, { teamId: string; spec: ScopeSpec; window: Window }>();
  for (const { action, notifyAt, compiled: policy } of policies) {
    // Subjects: the pool; the agents it names; or every agent of the team (or the one asked for).
    let subjects: (string | null)[];
    if (policy.scope === 'pool') {
      if (filter.agentId !== undefined && policy.agents !== null && !policy.agents.has(filter.agentId)) continue;
      subjects = [null];
    } else if (policy.agents !== null) subjects = [...policy.agents].filter((a) => filter.agentId === undefined || a === filter.agentId);
    else subjects = filter.agentId !== undefined ? [filter.agentId] : agents;
    if (subjects.length === 0) continue;
    for (const limit of policy.limits) {
      // Every agent's totals: one read per scope serves every policy on it, whichever agents each names.
      const spec = scopeSpecOf(policy, limit, 0, null);
      if (!spec) continue;
      const current = spec.window(now);
      // A total that has not started: nothing counts yet.
      const window = current ?? { start: policy.startsAt, end: TOTAL_END };
      wanted.push({ policy, action, notifyAt, limit, spec, window, started: current !== null, subjects });
      if (current !== null) reads.set(`${spec.scope}\u0000${window.start}`, { teamId, spec, window });
    }
  }
  const sums = reads.size > 0 ? await readWindowSums(events, reads) : new Map<string, bigint>();

  const rows: { row: BudgetStatus; used: bigint; of: bigint }[] = [];
  for (const w of wanted) {
    const { policy, limit, spec, window } = w;
    const test = spec.test || spec.matches ? (f: RecordFacts) => (!spec.matches || spec.matches(f.domain, f.endpoint)) && (!spec.test || spec.test(f)) : undefined;
    for (const agentId of w.subjects) {
      const subject = agentId === null ? policy.poolKey! : agentId;
      const spent = w.started ? (sums.get(totalKey(teamId, subject, spec.scope, window)) ?? 0n) : 0n;
      const held = w.started ? holds.heldIn(teamId, agentId ?? policy.agents, now, window, test, spec.measure, spec.currency ? holdValue(spec.currency) : undefined) : 0n;
      const left = limit.amount - spent - held;
      const row: BudgetStatus = {
        policy_id: policy.id,
        policy_name: policy.name,
        action: w.action,
        kind: limit.kind,
        currency: limit.currency,
        scope: policy.scope,
        agent_id: agentId,
        endpoint: limit.endpoint ?? null,
        window: shownEnd(window) === null ? null : { start: iso(window.start), end: iso(window.end) },
        limit: limit.amountText,
        spent: formatObserved(limit, spent),
        held: formatObserved(limit, held),
        remaining: formatObserved(limit, left > 0n ? left : 0n),
        used: limit.amount === 0n ? null : Number(((spent + held) * 1_000_000n) / limit.amount) / 1_000_000,
        notify_at: w.notifyAt,
        forecast: w.started ? forecastOf(limit, spent, held, window, now) : { spent_at_end: null, exhausted_at: null },
      };
      rows.push({ row, used: spent + held, of: limit.amount });
    }
  }
  // Closest to its limit first, exactly: used/of compared by cross-multiplying (a limit of 0 with
  // anything used is as full as can be), then by policy name and agent.
  const fullness = (r: { used: bigint; of: bigint }) => (r.of === 0n ? (r.used > 0n ? 2 : 0) : 1);
  rows.sort((a, b) => {
    const d = fullness(b) - fullness(a) || (a.of > 0n && b.of > 0n ? Number(b.used * a.of - a.used * b.of > 0n) - Number(b.used * a.of - a.used * b.of < 0n) : 0);
    return d || a.row.policy_name.localeCompare(b.row.policy_name) || (a.row.agent_id ?? '').localeCompare(b.row.agent_id ?? '');
  });
  return { rows: rows.slice(0, MAX_BUDGET_ROWS).map((r) => r.row), truncated: rows.length > MAX_BUDGET_ROWS };
}
