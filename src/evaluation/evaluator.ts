import type { Logger } from 'pino';
import { forgetWrittenAlerts, recordOccurrences } from '../alerts/repository.js';
import type { AuthorizationOutcome, AuthorizationRequest } from '../authorizations/decision.js';
import { authorizationFacts } from '../authorizations/holds.js';
import { approvalOccurrence, enqueueAuthorizationEvent, type ApprovalAsk } from '../authorizations/approvals.js';
import { apiCheck, authorizationByKey, encodeChecks, insertAuthorization, keepAnswerChecks, type AuthorizationRow, type Check, type StoredCheck } from '../authorizations/repository.js';
import { newId } from '../teams/keys.js';
import type { AnomalyConfig, EvaluationConfig } from '../config.js';
import type { EventRow } from '../ingest/records.js';
import { savepoint, type Database, type Steps } from '../stores/sql.js';
import { DecisionFailed, type AckEvaluator } from '../ingest/group-commit.js';
import type { EventStore } from '../stores/clickhouse.js';
import { caip2Network } from '../ingest/networks.js';
import type { Registry } from '../stores/sqlite.js';
import { AnomalyDetector } from './anomalies.js';
import { StalePolicies, type TotalsLedger } from './ledger.js';
import { NewPayees } from './new-payees.js';
import { addCrossings, clientReported, clientVerdictKey, suspendedKey, suspendedRecord } from './occurrence-builders.js';
import { evaluationStores } from './open-ledger.js';
import { TeamPolicies, type TeamState } from './team-policies.js';
import { toUnits } from './money.js';
import { OccurrenceMerger, Storms } from './occurrences.js';
import {
  breachKey,
  breachOccurrence,
  formatObserved,
  notAllowedKey,
  notAllowedOccurrence,
  shownEnd,
  type Breach,
  type CompiledLimit,
  type CompiledPolicy,
  type RecordFacts,
} from './policies.js';
import { brokenCount, type PolicySet } from './policy-index.js';
import type { TouchedTotal } from './totals.js';
import { utcDay, type Window } from './windows.js';

/** Where a record took a total, against the bounds of its scope (see ScopeBounds). */
const enum Reach {
  /** Under the floor: no limit broken, no threshold crossed. */
  Nothing,
  /** Somewhere between: the scope's lists are searched. */
  Some,
  /** Past the ceiling already before the record: every limit broken, no threshold left to cross. */
  Past,
}

/** What `prepare` worked out for one group, for `apply`. */
export interface EvaluationPlan {
  rows: readonly EventRow[];
  states: Map<string, TeamState>;
  touched: TouchedTotal[][];
  /** Authorizations to decide after the rows, each as the event it would be (at `now`). */
  requests: readonly AuthorizationRequest[];
  probes: EventRow[];
  probeTouched: TouchedTotal[][];
  /** Totals that could not be read (ClickHouse behind or down): not added to, not checked. */
  unknown: Set<string>;
}

/** The evaluation bounds of EvaluationConfig it uses. */
export type EvaluatorLimits = Pick<EvaluationConfig, 'maxAlertsPerCommit'>;

/** Distinct alerts all teams of one group may record one by one: a multiple of the bound per team. */
const GROUP_ALERTS_PER_TEAM_BOUND = 10;

/**
 * Evaluates every stored event against its team's active policies, the anomaly checks and the
 * client's own outcome, and records alerts, at the acknowledgement: inside the ingest log's group
 * commit, which is serialised, so batches of one agent arriving concurrently are evaluated one
 * after the other against one running total, no breach is missed and none is counted twice; and
 * the alerts commit with the records, so a duplicate is never evaluated again, even after a crash.
 *
 * The running totals and holds the rules read are kept by a TotalsLedger (ledger.ts): in memory
 * with one instance, in PostgreSQL rows locked per group with several.
 */
export class Evaluator implements AckEvaluator<EvaluationPlan> {
  private readonly policies: TeamPolicies;
  private readonly ledger: TotalsLedger;
  private anomalies: AnomalyDetector;
  private readonly payees: NewPayees;

  /** `shared`: the store several instances share (PostgreSQL), in place of the registry (see open-ledger.ts). */
  constructor(
    registry: Registry | undefined,
    store: EventStore,
    private readonly config: AnomalyConfig,
    private readonly logger: Logger,
    /** Resolves true once ClickHouse holds every record the log holds (false: not in time). */
    awaitLoaded: () => Promise<boolean>,
    private readonly limits: EvaluatorLimits = { maxAlertsPerCommit: 100 },
    shared?: Database,
  ) {
    const { db, ledger } = evaluationStores(registry, shared, store, logger, awaitLoaded);
    this.ledger = ledger;
    this.policies = new TeamPolicies(db, ledger);
    this.anomalies = new AnomalyDetector(config);
    this.payees = new NewPayees(config.newPayeeLearningHours);
  }

  /**
   * Before the commit: works out the running totals each event adds to, and reads from ClickHouse
   * those the process cannot vouch for. A read waits until the loader has every record the team
   * acknowledged before; when ClickHouse cannot answer in time, those totals stay unknown and the
   * windowed limits on them are not checked for this group (logged), and read again next time.
   */
  async prepare(rows: readonly EventRow[], now = Date.now(), requests: readonly AuthorizationRequest[] = []): Promise<EvaluationPlan> {
    const probes = requests.map((r) => probeRow(r, now));
    // Ingest alone (the common group) pays no copy for the authorizations' part.
    const all = probes.length === 0 ? rows : [...rows, ...probes];
    const states = new Map<string, TeamState>();
    for (const row of all) {
      if (!states.has(row.team_id)) states.set(row.team_id, this.policies.current(row.team_id) ?? (await this.policies.reload(row.team_id, now)));
    }
    // The running totals each event adds to, worked out once per event (teams without windowed
    // policies have no scopes, and pay nothing here).
    const touchedBy = (row: EventRow) => states.get(row.team_id)!.scopes.touchedBy(row);
    const touched = rows.map(touchedBy);
    const probeTouched = probes.map(touchedBy);
    const unknown = await this.ledger.prepare({ rows, touched, probes, probeTouched, requests, states }, now);
    return { rows, states, touched, unknown, requests, probes, probeTouched };
  }

  /**
   * Inside the commit's transaction, after apply: decides each authorization against the running
   * totals (this group's records included) plus what open authorizations hold, and writes it. An
   * approval holds its amount; a block policy it would break declines it and raises (or updates)
   * that breach's alert, marked declined. Requests are decided in order, so of many at once for
   * one agent, exactly as many are approved as the limits allow. Not `isolated`, a decision that
   * fails throws DecisionFailed (the group commit rolls back and decides again, isolated).
   */
  *decide(plan: EvaluationPlan, now = Date.now(), isolated = true): Steps<AuthorizationOutcome[]> {
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
        yield* savepoint(recordOccurrences(folded.map((f) => f.occurrence), now));
      } catch (error) {
        // The decisions stand; only the count of their folded alerts is lost (logged).
        this.logger.error({ err: error, occurrences: folded.reduce((n, f) => n + f.occurrence.count, 0) }, 'recording the storm alert of declined authorizations failed');
      }
    }
    return outcomes;
  }

  /**
   * What deciding an authorization costs, in checks: the limits of the policies that apply to its
   * agent, as far as this process knows them now (1 for a team not loaded yet). The group commit
   * takes authorizations into one group up to a total of these.
   */
  weigh(request: AuthorizationRequest): number {
    return 1 + (this.policies.loaded(request.teamId)?.index.limitCountOf(request.agentId) ?? 0);
  }

  private *decideOne(plan: EvaluationPlan, i: number, request: AuthorizationRequest, now: number, storms: Storms): Steps<AuthorizationOutcome> {
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
        const held = this.ledger.holds.heldIn(request.teamId, agents, now, total.window, test, total.spec.measure);
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
        // This call: its amount, or one more call.
        const asked = limit.measure === 'calls' ? 1n : amount;
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
        const what =
          limit.kind === 'per_call'
            ? `the payment of ${request.amount}`
            : limit.measure === 'calls'
              ? `${facts!.spentText} calls and ${facts!.heldText} held plus this one`
              : `spend of ${facts!.spentText} and holds of ${facts!.heldText} plus ${request.amount}`;
        const whose = policy.scope === 'pool' ? ' (a pool)' : '';
        const reason = `${verb(action)} by policy "${policy.name}"${whose}: ${what} would exceed its ${limit.kind} limit of ${limit.amountText}${limit.endpoint ? ` to ${limit.endpoint}` : ''}`;
        reasons.push(reason);
        if (action === 'block') {
          const window = facts?.window ?? null;
          declines.push({
            policy,
            limit,
            observed: facts ? observed : amount,
            window,
            dedupKey: breachKey(request.agentId, policy, limit, window),
          });
        } else if (action === 'approve') asks.push({ policyId: policy.id, policyName: policy.name, kind: limit.kind, limit: limit.amountText, reason, timeoutMs: policy.approvalTimeoutMs });
      }
    }
    const declined = declines.length > 0 || outsideOf.length > 0 || suspended;
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
      yield* recordOccurrences([approvalOccurrence(row, asks, now)], now);
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
      yield* recordOccurrences(occurrences, now);
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

  /** Whether other instances count into the same totals (a group whose evaluation fails then fails whole). */
  get sharedLedger(): boolean {
    return this.ledger.shared;
  }

  /** In the group's transaction before apply and decide: the ledger locks and reads what the group touches (see TotalsLedger.lock). */
  *lockTotals(plan: EvaluationPlan, now: number): Steps<void> {
    try {
      yield* this.ledger.lock(plan, now);
    } catch (error) {
      // Policies changed on another instance: those teams are reloaded before the group is tried again.
      if (error instanceof StalePolicies) this.policies.markStale(error.teamIds);
      throw error;
    }
  }

  /** In the group's transaction after apply and decide: the ledger writes back what changed. */
  *saveTotals(plan: EvaluationPlan): Steps<void> {
    yield* this.ledger.save(plan);
  }

  /** Releases an open hold (captured or voided in the commit, src/authorizations/capture.ts); false when none was held. */
  release(authorizationId: string): boolean {
    return this.ledger.holds.remove(authorizationId);
  }

  /** A pending authorization a person approved: its hold counts on, to its new expiry (src/authorizations/approvals.ts). */
  extendHold(authorizationId: string, expiresAt: number): boolean {
    return this.ledger.holds.extend(authorizationId, expiresAt);
  }

  /**
   * The breaches of a record a person approved (it captured an authorization an approve policy
   * sent to them): every limit it breaks but those of approve policies, and the thresholds it
   * crosses, one by one (rare: no prefix or cursor is kept).
   */
  private approvedBreaches(
    merged: OccurrenceMerger,
    i: number,
    row: EventRow,
    set: PolicySet,
    rowTouched: readonly TouchedTotal[],
    before: readonly bigint[],
    after: readonly (bigint | undefined)[],
    amount: bigint,
    now: number,
  ): void {
    const skip = (policy: CompiledPolicy) => policy.action === 'approve';
    if (set.perCall) merged.addBreachesExcept(i, row, set.perCall, brokenCount(set.perCall, amount), null, amount, amount, now, skip);
    for (const { test, list } of set.perCallFiltered) if (test(row)) merged.addBreachesExcept(i, row, list, brokenCount(list, amount), null, amount, amount, now, skip);
    for (let k = 0; k < rowTouched.length; k++) {
      const spent = after[k];
      if (spent === undefined) continue;
      const { spec, window } = rowTouched[k]!;
      const list = set.windowed.get(spec.scope);
      if (!list) continue;
      merged.addBreachesExcept(i, row, list, brokenCount(list, spent), window, spent, amount, now, skip);
      addCrossings(merged, i, row, list, before[k]!, spent, window);
    }
  }

  /**
   * Inside the commit's transaction: evaluates the rows the commit claimed (`fresh`; duplicates
   * are never evaluated again) and records alerts. Returns, per row, how many alerts it opened.
   */
  *apply(plan: EvaluationPlan, fresh: readonly boolean[], now = Date.now()): Steps<number[]> {
    const { rows, states, touched, unknown } = plan;
    // Occurrences of one breach in this group become one: the first event opens (or updates) the
    // alert; past the bound per team, the rest are counted into the team's storm alert.
    const bound = this.limits.maxAlertsPerCommit;
    const merged = new OccurrenceMerger(bound, bound * GROUP_ALERTS_PER_TEAM_BOUND);
    const claimed: number[] = [];
    // Scratch for each record's totals, reused record after record.
    const before: bigint[] = [];
    const after: (bigint | undefined)[] = [];
    const reach: Reach[] = [];
    rows.forEach((row, i) => {
      if (!fresh[i]) return;
      claimed.push(i);
      const state = states.get(row.team_id)!;
      const amount = toUnits(row.amount);
      // Each scope's total grows once per event (by its amount, or by one call), however many
      // policies read it. An unknown total stays absent (its limits are not checked) until it can
      // be read whole. What it was before tells which thresholds this record crossed.
      const rowTouched = touched[i]!;
      const n = rowTouched.length;
      // Each total before and after this record (after undefined: unknown).
      for (let k = 0; k < n; k++) {
        const total = rowTouched[k]!;
        if (unknown.size > 0 && unknown.has(total.key)) {
          after[k] = undefined;
          continue;
        }
        const by = total.spec.measure === 'calls' ? 1n : amount;
        const grown = this.ledger.add(total, by);
        const was = grown - by;
        before[k] = was;
        after[k] = grown;
        if (total.boundsOf !== state.index) {
          total.bounds = state.index.boundsOf(total.spec.scope);
          total.boundsOf = state.index;
        }
        const bounds = total.bounds!;
        reach[k] = grown < bounds.floor ? Reach.Nothing : was > bounds.ceiling ? Reach.Past : Reach.Some;
      }
      // Per scope, the limits the total (or the payment, per_call) breaks are a prefix of the
      // scope's limits sorted by amount: one binary search each, whatever the number of policies.
      // A payment a person approved breaks no approve policy (it was asked for): the rare slow path.
      const approved = row.approved_by_person === true;
      for (const set of state.index.setsOf(row.agent_id)) {
        if (approved) {
          this.approvedBreaches(merged, i, row, set, rowTouched, before, after, amount, now);
          continue;
        }
        if (set.perCall) merged.addBreaches(i, row, set.perCall, brokenCount(set.perCall, amount), null, amount, amount, now);
        for (const { test, list } of set.perCallFiltered) if (test(row)) merged.addBreaches(i, row, list, brokenCount(list, amount), null, amount, amount, now);
        if (set.windowed.size === 0) continue;
        for (let k = 0; k < n; k++) {
          const spent = after[k];
          if (spent === undefined || reach[k] === Reach.Nothing) continue;
          const { spec, window } = rowTouched[k]!;
          const list = set.windowed.get(spec.scope);
          if (!list) continue;
          merged.addBreaches(i, row, list, reach[k] === Reach.Past ? list.amounts.length : brokenCount(list, spent), window, spent, amount, now);
          if (reach[k] === Reach.Past) continue;
          addCrossings(merged, i, row, list, before[k]!, spent, window);
        }
      }
      // Allowlists (few teams have one: one flag tells the rest): a record outside one raises its not_allowed alert.
      if (state.index.anyAllow) {
        for (const policy of state.index.allowOf(row.agent_id)) {
          if ((policy.match && !policy.match(row)) || (approved && policy.action === 'approve')) continue;
          const outside = policy.allow!(row, row.payee_address || null);
          if (outside.length === 0) continue;
          const day = utcDay(row.event_time);
          merged.add(i, row, notAllowedKey(row.agent_id, policy, day.start), () => notAllowedOccurrence(row.team_id, policy, row, outside, day));
        }
      }
      const verdict = clientVerdictKey(row);
      if (verdict) merged.add(i, row, verdict, () => clientReported(row, verdict));
      if (state.suspended.size > 0 && state.suspended.has(row.agent_id)) {
        const day = utcDay(row.event_time);
        const key = suspendedKey(row.agent_id, day);
        merged.add(i, row, key, () => suspendedRecord(row, key, day));
      }
      for (const occurrence of this.anomalies.check(row.team_id, row, amount)) merged.add(i, row, occurrence.dedupKey, () => occurrence);
    });
    for (const { row, occurrence } of yield* this.payees.check(rows, claimed, now)) merged.add(row, rows[row]!, occurrence.dedupKey, () => occurrence);

    const created = new Array<number>(rows.length).fill(0);
    const groups = merged.result();
    if (groups.length === 0) return created;
    const opened = yield* recordOccurrences(groups.map((g) => g.occurrence), now);
    groups.forEach((g, i) => {
      if (opened[i]) created[g.row]!++;
    });
    return created;
  }

  /**
   * Forgets every running total, anomaly baseline and cached payee (after a rolled-back commit,
   * whose rows they may include): totals are read again from ClickHouse when next needed.
   */
  reset(): void {
    this.ledger.reset();
    this.policies.clear();
    this.payees.clear();
    this.anomalies = new AnomalyDetector(this.config);
    // What this process remembers of alerts may include the rolled-back write.
    forgetWrittenAlerts();
  }
}

/** An authorization as the event it would be if paid now: what its windows and matchers read. */
function probeRow(request: AuthorizationRequest, now: number): EventRow {
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
