/** Authorization decisions, in the group commit after its records: serialised with them, so limits count both. */
import type { Logger } from 'pino';
import { recordOccurrences } from '../alerts/repository.js';
import type { WrittenAlerts } from '../alerts/written-alerts.js';
import type { TotalsLedger } from '../evaluation/ledger.js';
import { formatUnits, toUnits } from '../domain/money.js';
import { BUILT_IN_BOOK, valueUnitsIn, type RateBook } from '../domain/rates.js';
import { unvaluedKey, unvaluedRecord } from '../evaluation/occurrence-builders.js';
import { GROUP_ALERTS_PER_TEAM_BOUND, Storms } from '../evaluation/occurrences.js';
import { type CompiledLimit, type CompiledPolicy, type RecordFacts } from '../evaluation/policies.js';
import { breachKey, breachOccurrence, formatObserved, notAllowedOccurrence, shownEnd, type Breach } from '../evaluation/breaches.js';
import type { TeamState } from '../evaluation/team-policies.js';
import type { TouchedTotal } from '../evaluation/totals.js';
import { utcDay, type Window } from '../domain/windows.js';
import { DecisionFailed } from '../ingest/group-commit.js';
import { caip2Network } from '../domain/networks.js';
import type { EventRow } from '../domain/record-row.js';
import { savepoint, type Steps } from '../stores/sql.js';
import { newId } from '../domain/ids.js';
import { approvalOccurrence, enqueueAuthorizationEvent, type ApprovalAsk } from './approvals.js';
import type { AuthorizationOutcome, AuthorizationRequest } from './decision.js';
import { authorizationFacts } from './holds.js';
import { apiCheck, authorizationByKey, encodeChecks, insertAuthorization, keepAnswerChecks, type AuthorizationRow, type Check, type StoredCheck } from './repository.js';

/** What a group's evaluation prepared that its decisions read. */
export interface DecisionPlan {
  readonly requests: readonly AuthorizationRequest[];
  /** Each request as the event it would be (see probeRow), and the running totals it would add to. */
  readonly probes: readonly EventRow[];
  readonly probeTouched: readonly (readonly TouchedTotal[])[];
  /** Totals that could not be read (ClickHouse behind or down): their requests are not decided. */
  readonly unknown: ReadonlySet<string>;
  readonly states: ReadonlyMap<string, TeamState>;
  /** The rates of teams with policies in value. */
  readonly books: ReadonlyMap<string, RateBook>;
}

/** What deciding an authorization costs, in checks (1 for a team not loaded yet): a group takes decisions up to a total of these. */
export function decisionWeight(request: AuthorizationRequest, state: TeamState | undefined): number {
  return 1 + (state?.index.limitCountOf(request.agentId) ?? 0);
}

export class AuthorizationDecisions {
  constructor(
    /** The running totals and holds the decisions read; an approval adds its hold. */
    private readonly ledger: Pick<TotalsLedger, 'spent' | 'holds'>,
    private readonly logger: Logger,
    /** Distinct alerts of declines one team records one by one per group, as for records. */
    private readonly limits: { readonly maxAlertsPerCommit: number },
    /** The alerts the evaluator wrote last (see recordOccurrences). */
    private readonly written: WrittenAlerts,
  ) {}

  /** In order, so of many at once exactly as many are approved as the limits allow; not `isolated`, a failure throws DecisionFailed. */
  *decide(plan: DecisionPlan, now: number, isolated: boolean): Steps<AuthorizationOutcome[]> {
    // The alerts of declines are bounded like a group's records' (their own count): past the
    // bound, a team's declined breaches are counted into its storm alert.
    const bound = this.limits.maxAlertsPerCommit;
    const storms = new Storms(bound, bound * GROUP_ALERTS_PER_TEAM_BOUND);
    const outcomes: AuthorizationOutcome[] = [];
    for (const [i, request] of plan.requests.entries()) {
      if (!isolated) {
        try {
          outcomes.push(yield* this.decideOne(plan, i, request, now, storms));
        } catch (error) {
          throw new DecisionFailed(error);
        }
        continue;
      }
      try {
        // A savepoint each: one request that fails (a bug) fails alone, never the group's records
        // or another team's decision.
        outcomes.push(yield* savepoint(this.decideOne(plan, i, request, now, storms)));
      } catch (error) {
        this.logger.error({ err: error, teamId: request.teamId, agentId: request.agentId }, 'deciding an authorization failed');
        outcomes.push({ failed: error });
      }
    }
    const folded = storms.occurrences();
    if (folded.length > 0) {
      try {
        yield* savepoint(recordOccurrences(folded.map((f) => f.occurrence), now, this.written));
      } catch (error) {
        // The decisions stand; only the count of their folded alerts is lost (logged).
        this.logger.error({ err: error, occurrences: folded.reduce((n, f) => n + f.occurrence.count, 0) }, 'recording the storm alert of declined authorizations failed');
      }
    }
    return outcomes;
  }

  private *decideOne(plan: DecisionPlan, i: number, request: AuthorizationRequest, now: number, storms: Storms): Steps<AuthorizationOutcome> {
    if (request.idempotencyKey !== null) {
      const existing = yield* authorizationByKey(request.teamId, request.idempotencyKey);
      if (existing) return { row: existing };
    }
    const probe = plan.probes[i]!;
    if (plan.probeTouched[i]!.some((t) => plan.unknown.has(t.key))) return { unavailable: true };
    const amount = toUnits(request.amount);
    const state = plan.states.get(request.teamId)!;
    const checks: StoredCheck[] = [];
    // The same, as the answer shows them.
    const answer: Check[] = [];
    const reasons: string[] = [];
    const declines: Breach[] = [];
    // Allowlists a block policy holds it outside of; approve policies it would break (a person decides).
    const outsideOf: { policy: CompiledPolicy; outside: string[] }[] = [];
    // Block policies in value that cannot value it (no rate for its asset): declined, never let through uncounted.
    const unvaluedBy: CompiledPolicy[] = [];
    // Its value in a currency at `now`, once per currency; null: no rate values it (or no asset given).
    const book = plan.books.get(request.teamId) ?? BUILT_IN_BOOK;
    const values = new Map<string, bigint | null>();
    const valueIn = (currency: string): bigint | null => {
      let value = values.get(currency);
      if (value === undefined) values.set(currency, (value = valueUnitsIn(book, request.asset, request.amount, now, currency)));
      return value;
    };
    // Holds in value: each held amount valued as the authorization was.
    const holdValue = (currency: string) => (facts: RecordFacts, amount: bigint, at: number) => valueUnitsIn(book, facts.asset, formatUnits(amount), at, currency) ?? undefined;
    const asks: ApprovalAsk[] = [];
    // A suspended agent is stopped whatever its budgets say.
    const suspended = state.suspended.has(request.agentId);
    if (suspended) reasons.push(`Declined: agent ${request.agentId} is suspended`);
    // What each scope's limits read, worked out once per scope (not per limit), from the totals
    // prepare found this probe touches: the total in its window, what open holds add, as text too.
    // A windowed limit whose scope it does not touch does not apply (a filter it fails, a `total`
    // not started yet).
    const touched = new Map(plan.probeTouched[i]!.map((t) => [t.spec.scope, t]));
    const perScope = new Map<string, { window: Window; spent: bigint; held: bigint; spentText: string; heldText: string }>();
    const factsOf = (policy: CompiledPolicy, limit: CompiledLimit) => {
      let facts = perScope.get(limit.scope!);
      if (!facts) {
        const total = touched.get(limit.scope!);
        if (!total) return undefined;
        const spent = this.ledger.spent(total) ?? 0n;
        // One scope is one pattern, filter and pool: the same held amount for each of its limits.
        const agents = total.spec.pool ? total.spec.pool.agents : request.agentId;
        const test = total.spec.test || total.spec.matches ? (f: RecordFacts) => (!total.spec.matches || total.spec.matches(f.domain, f.endpoint)) && (!total.spec.test || total.spec.test(f)) : undefined;
        const held = this.ledger.holds.heldIn(request.teamId, agents, now, total.window, test, total.spec.measure, total.spec.currency ? holdValue(total.spec.currency) : undefined);
        facts = { window: total.window, spent, held, spentText: formatObserved(limit, spent), heldText: formatObserved(limit, held) };
        perScope.set(limit.scope!, facts);
      }
      return facts;
    };
    const verb = (action: CompiledPolicy['action']) => (action === 'block' ? 'Declined' : action === 'approve' ? 'Needs approval' : 'Flagged');
    for (const policy of state.index.policiesOf(request.agentId)) {
      if (policy.match && !policy.match(probe)) continue;
      if (policy.allow) {
        const outside = policy.allow(probe, request.payeeAddress);
        if (outside.length > 0) {
          const reason = `${verb(policy.action)} by policy "${policy.name}": not on its allowlist (${outside.join(', ')})`;
          reasons.push(reason);
          if (policy.action === 'block') outsideOf.push({ policy, outside });
          else if (policy.action === 'approve') asks.push({ policyId: policy.id, policyName: policy.name, kind: 'not_allowed', limit: null, reason, timeoutMs: policy.approvalTimeoutMs });
        }
      }
      for (const limit of policy.limits) {
        if (limit.matches && !limit.matches(probe.domain, probe.endpoint)) continue;
        const facts = limit.scope === null ? undefined : factsOf(policy, limit);
        if (limit.scope !== null && !facts) continue;
        // This call: its amount, its value, or one more call.
        const value = limit.measure === 'value' ? valueIn(limit.currency!) : null;
        if (limit.measure === 'value' && value === null) {
          const reason = `${verb(policy.action)} by policy "${policy.name}": ${request.asset ? `asset ${request.asset} has no rate into ${limit.currency}` : 'no asset given'}, so its value is unknown and its ${limit.kind} limit of ${limit.amountText} ${limit.currency} cannot be checked`;
          if (!reasons.includes(reason)) reasons.push(reason);
          if (policy.action === 'block' && !unvaluedBy.includes(policy)) unvaluedBy.push(policy);
          else if (policy.action === 'approve' && !asks.some((a) => a.policyId === policy.id && a.kind === 'unvalued')) {
            asks.push({ policyId: policy.id, policyName: policy.name, kind: 'unvalued', limit: null, reason, timeoutMs: policy.approvalTimeoutMs });
          }
          continue;
        }
        const asked = limit.measure === 'calls' ? 1n : value ?? amount;
        const observed = (facts ? facts.spent + facts.held : 0n) + asked;
        const breaks = observed > limit.amount;
        const action = policy.action;
        const check: StoredCheck = [
          policy.id,
          policy.name,
          action,
          limit.kind,
          facts ? facts.window.start : null,
          facts ? shownEnd(facts.window) : null,
          limit.amountText,
          facts ? facts.spentText : '0',
          facts ? facts.heldText : '0',
        ];
        checks.push(check);
        const left = limit.amount - observed + asked;
        answer.push(apiCheck(check, left > 0n ? formatObserved(limit, left) : '0', breaks));
        if (!breaks) continue;
        // Its value, where it is not the amount itself (a peg one for one).
        const worth = limit.measure === 'value' && asked !== amount ? ` (worth ${formatUnits(asked)} ${limit.currency})` : '';
        const what =
          limit.kind === 'per_call'
            ? `the payment of ${request.amount}${worth}`
            : limit.measure === 'calls'
              ? `${facts!.spentText} calls and ${facts!.heldText} held plus this one`
              : `spend of ${facts!.spentText} and holds of ${facts!.heldText} plus ${request.amount}${worth}`;
        const whose = policy.scope === 'pool' ? ' (a pool)' : '';
        const reason = `${verb(action)} by policy "${policy.name}"${whose}: ${what} would exceed its ${limit.kind} limit of ${limit.amountText}${limit.endpoint ? ` to ${limit.endpoint}` : ''}`;
        reasons.push(reason);
        if (action === 'block') {
          const window = facts?.window ?? null;
          declines.push({
            policy,
            limit,
            observed: facts ? observed : asked,
            window,
            dedupKey: breachKey(request.agentId, policy, limit, window),
          });
        } else if (action === 'approve') asks.push({ policyId: policy.id, policyName: policy.name, kind: limit.kind, limit: limit.amountText, reason, timeoutMs: policy.approvalTimeoutMs });
      }
    }
    const declined = declines.length > 0 || outsideOf.length > 0 || unvaluedBy.length > 0 || suspended;
    // Nothing declines it, but an approve policy would be broken: a person decides, within the
    // shortest wait of those policies; its amount is held meanwhile.
    const pending = !declined && asks.length > 0;
    const approved = !declined && !pending;
    const pendingUntil = pending ? now + Math.min(...asks.map((a) => a.timeoutMs)) : null;
    const row: AuthorizationRow = {
      id: probe.id,
      team_id: request.teamId,
      agent_id: request.agentId,
      endpoint: request.endpoint,
      domain: request.domain,
      amount: request.amount,
      asset: request.asset,
      network: request.network,
      payee_address: request.payeeAddress,
      category: request.category,
      tags: request.tags.length > 0 ? JSON.stringify(request.tags) : null,
      decision: approved ? 'approved' : pending ? 'pending' : 'declined',
      state: approved ? 'held' : pending ? 'pending' : 'declined',
      checks: encodeChecks(checks),
      reasons: JSON.stringify(reasons),
      idempotency_key: request.idempotencyKey,
      created_at: now,
      // A pending one holds its amount until its wait ends (then, undecided, it reads as declined).
      expires_at: pendingUntil ?? now + request.expiresInS * 1000,
      captured_amount: null,
      captured_at: null,
      captured_by: null,
      voided_at: null,
      hold_s: request.expiresInS,
      pending_until: pendingUntil,
      decided_at: pending ? null : now,
      decided_by: null,
      decision_note: null,
    };
    if (!(yield* insertAuthorization(row))) {
      // Another instance decided this idempotency key first: its decision is the answer.
      const existing = yield* authorizationByKey(request.teamId, request.idempotencyKey!);
      if (existing) return { row: existing };
      throw new Error(`authorization ${row.id} could not be written`);
    }
    if (pending) {
      // People hear of it: its approval alert (webhooks and Slack, as any alert) and its own event.
      yield* recordOccurrences([approvalOccurrence(row, asks, now)], now, this.written);
      yield* enqueueAuthorizationEvent(row, 'authorization.pending', now);
    }
    if (declined) {
      // The breach's alert, as a record breaking it would raise: one alert per breach, up to the
      // team's bound for this group; the rest counted into its storm alert (after the write).
      const individual = declines.slice(0, storms.room(request.teamId));
      const occurrences = individual.map((breach) => {
        const occurrence = breachOccurrence(request.teamId, breach, probe, amount, now);
        occurrence.details = { ...occurrence.details, declined: true, authorizationId: row.id };
        occurrence.message = `Declined authorization ${row.id}: ${occurrence.message}`;
        occurrence.eventIds = [];
        return occurrence;
      });
      // Outside an allowlist: its not_allowed alert, as a record outside it would raise (these are few: one per policy).
      for (const { policy, outside } of outsideOf) {
        const occurrence = notAllowedOccurrence(request.teamId, policy, probe, outside, utcDay(now));
        occurrence.details = { ...occurrence.details, declined: true, authorizationId: row.id };
        occurrence.message = `Declined authorization ${row.id}: agent ${request.agentId} asked to pay outside the allowlist of policy "${policy.name}": ${outside.join(', ')} (to ${request.endpoint})`;
        occurrence.eventIds = [];
        occurrences.push(occurrence);
      }
      // Unvalued under a block policy: its unvalued alert, as a record would raise (one per agent, asset and day).
      for (const policy of unvaluedBy) {
        const day = utcDay(now);
        const occurrence = unvaluedRecord(probe, unvaluedKey(request.agentId, request.asset ?? '', day), day, policy);
        occurrence.details = { ...occurrence.details, declined: true, authorizationId: row.id };
        occurrence.message = `Declined authorization ${row.id}: ${occurrence.message}`;
        occurrence.eventIds = [];
        occurrences.push(occurrence);
        break;
      }
      yield* recordOccurrences(occurrences, now, this.written);
      for (let k = 0; k < individual.length; k++) storms.admit(request.teamId, i, probe);
      const rest = declines.slice(individual.length);
      if (rest.length > 0) {
        const byKind = new Map<string, number>();
        for (const breach of rest) byKind.set(breach.limit.kind, (byKind.get(breach.limit.kind) ?? 0) + 1);
        for (const [kind, count] of byKind) storms.fold(request.teamId, i, probe, kind, count, 'critical', 'authorization');
        storms.samplePolicies(request.teamId, rest.map((b) => b.policy));
      }
    }
    keepAnswerChecks(row, answer);
    // Last, once nothing of this decision can fail: memory follows what is written.
    if (!declined) this.ledger.holds.add({ id: row.id, teamId: row.team_id, agentId: row.agent_id, ...authorizationFacts(row), amount, at: now, expiresAt: row.expires_at });
    return { row };
  }
}

/** An authorization as the event it would be if paid now: what its windows and matchers read. */
export function probeRow(request: AuthorizationRequest, now: number): EventRow {
  return {
    team_id: request.teamId,
    event_time: now,
    id: newId('auth', now),
    agent_id: request.agentId,
    endpoint: request.endpoint,
    domain: request.domain,
    amount: request.amount,
    // What filters read; an asset or network not given is undefined (checked by every filter on it).
    category: request.category,
    tags: request.tags,
    asset: request.asset ?? undefined,
    network: request.network ? (caip2Network(request.network) ?? request.network) : undefined,
  } as EventRow;
}
