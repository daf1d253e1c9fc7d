import type { Logger } from 'pino';
import { recordOccurrences } from '../alerts/repository.js';
import { WrittenAlerts } from '../alerts/written-alerts.js';
import { AuthorizationDecisions, decisionWeight, probeRow } from '../authorizations/decide.js';
import type { AuthorizationOutcome, AuthorizationRequest } from '../authorizations/decision.js';
import type { AnomalyConfig, EvaluationConfig } from '../config.js';
import type { AckEvaluator } from '../ingest/group-commit.js';
import type { EventRow } from '../domain/record-row.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { Database, Steps } from '../stores/sql.js';
import type { Registry } from '../stores/sqlite.js';
import type { PolicyRevisions } from '../policies/revisions.js';
import { AnomalyDetector } from './anomalies.js';
import { StalePolicies, type TotalsLedger } from './ledger.js';
import { toUnits } from '../domain/money.js';
import { NewPayees } from './new-payees.js';
import { addCrossings, clientReported, clientVerdictKey, suspendedKey, suspendedRecord, unvaluedKey, unvaluedRecord } from './occurrence-builders.js';
import { GROUP_ALERTS_PER_TEAM_BOUND, OccurrenceMerger } from './occurrences.js';
import { evaluationStores } from './open-ledger.js';
import { type CompiledPolicy } from './policies.js';
import { notAllowedKey, notAllowedOccurrence } from './breaches.js';
import { brokenCount, type PolicySet } from './policy-index.js';
import { TeamPolicies, type TeamState } from './team-policies.js';
import type { TouchedTotal } from './totals.js';
import { utcDay } from '../domain/windows.js';
import { BUILT_IN_BOOK, type RateBook } from '../domain/rates.js';
import type { RateBooks } from '../rates/books.js';

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
  /** The rates of the teams with policies in value: what authorizations and holds are valued by. */
  books: Map<string, RateBook>;
}

/** The evaluation bounds of EvaluationConfig it uses. */
export type EvaluatorLimits = Pick<EvaluationConfig, 'maxAlertsPerCommit'>;

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
/** What an evaluator reads and writes through. */
export interface EvaluatorDeps {
  /** The registry of one instance; absent with `shared`. */
  registry?: Registry;
  /** The store several instances share (PostgreSQL), in place of the registry (see open-ledger.ts). */
  shared?: Database;
  store: EventStore;
  anomalies: AnomalyConfig;
  logger: Logger;
  /** Resolves true once ClickHouse holds every record the log holds (false: not in time). */
  awaitLoaded: () => Promise<boolean>;
  limits?: EvaluatorLimits;
  /** Raised by this process's changes to policies and agents: a team's policies are reloaded then. */
  revisions: PolicyRevisions;
  /** The teams' rates (without: the built-in pegs, in USD). */
  rates?: Pick<RateBooks, 'book'>;
}

export class Evaluator implements AckEvaluator<EvaluationPlan> {
  private readonly config: AnomalyConfig;
  private readonly limits: EvaluatorLimits;
  /** The alerts this evaluator wrote last (SQLite): updated again without a read. */
  private readonly written = new WrittenAlerts();
  private readonly policies: TeamPolicies;
  private readonly ledger: TotalsLedger;
  private anomalies: AnomalyDetector;
  private readonly payees: NewPayees;
  private readonly decisions: AuthorizationDecisions;
  private readonly rates: Pick<RateBooks, 'book'> | undefined;

  constructor(deps: EvaluatorDeps) {
    this.rates = deps.rates;
    const { store, logger, awaitLoaded } = deps;
    this.config = deps.anomalies;
    this.limits = deps.limits ?? { maxAlertsPerCommit: 100 };
    const { db, ledger } = evaluationStores(deps.registry, deps.shared, store, logger, awaitLoaded);
    this.ledger = ledger;
    this.policies = new TeamPolicies(db, ledger, deps.revisions);
    this.anomalies = new AnomalyDetector(this.config);
    this.payees = new NewPayees(this.config.newPayeeLearningHours);
    this.decisions = new AuthorizationDecisions(ledger, logger, this.limits, this.written);
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
    const books = new Map<string, RateBook>();
    for (const [teamId, state] of states) if (state.index.anyValued) books.set(teamId, this.rates ? await this.rates.book(teamId) : BUILT_IN_BOOK);
    return { rows, states, touched, unknown, requests, probes, probeTouched, books };
  }

  /**
   * Inside the commit's transaction, after apply: decides the group's authorizations in order
   * (src/authorizations/decide.ts). Not `isolated`, a decision that fails throws DecisionFailed.
   */
  *decide(plan: EvaluationPlan, now = Date.now(), isolated = true): Steps<AuthorizationOutcome[]> {
    return yield* this.decisions.decide(plan, now, isolated);
  }

  /** What deciding an authorization costs, in checks (see decisionWeight). */
  weigh(request: AuthorizationRequest): number {
    return decisionWeight(request, this.policies.loaded(request.teamId));
  }

  /** Whether other instances count into the same totals (a group whose evaluation fails then fails whole). */
  get sharedLedger(): boolean {
    return this.ledger.shared;
  }

  /** In the group's transaction before apply and decide: the ledger locks and reads what the group touches (see TotalsLedger.lock). */
  *lockLedger(plan: EvaluationPlan, now: number): Steps<void> {
    try {
      yield* this.ledger.lock(plan, now);
    } catch (error) {
      // Policies changed on another instance: those teams are reloaded before the group is tried again.
      if (error instanceof StalePolicies) this.policies.markStale(error.teamIds);
      throw error;
    }
  }

  /** In the group's transaction after apply and decide: the ledger writes back what changed. */
  *saveLedger(plan: EvaluationPlan): Steps<void> {
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
    valueIn: (currency: string) => bigint | null,
  ): void {
    const skip = (policy: CompiledPolicy) => policy.action === 'approve';
    if (set.perCall) merged.addBreachesExcept(i, row, set.perCall, brokenCount(set.perCall, amount), null, amount, amount, now, skip);
    for (const { test, list } of set.perCallFiltered) if (test(row)) merged.addBreachesExcept(i, row, list, brokenCount(list, amount), null, amount, amount, now, skip);
    for (const { currency, test, list } of set.perCallValued) {
      if (test && !test(row)) continue;
      const value = valueIn(currency);
      if (value !== null) merged.addBreachesExcept(i, row, list, brokenCount(list, value), null, value, value, now, skip);
    }
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
      // The record's value in a currency, worked out once per currency (nearly always one: the team's).
      let valuedIn: string | undefined;
      let valueUnits: bigint | null = null;
      const valueIn = (currency: string): bigint | null => {
        if (valuedIn === currency) return valueUnits;
        valuedIn = currency;
        valueUnits = row.value !== null && row.currency === currency ? toUnits(row.value) : null;
        return valueUnits;
      };
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
        // A value the record does not have adds nothing (raised below as unvalued).
        const by = total.spec.measure === 'calls' ? 1n : total.spec.measure === 'value' ? (valueIn(total.spec.currency!) ?? 0n) : amount;
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
          this.approvedBreaches(merged, i, row, set, rowTouched, before, after, amount, now, valueIn);
          continue;
        }
        if (set.perCall) merged.addBreaches(i, row, set.perCall, brokenCount(set.perCall, amount), null, amount, amount, now);
        for (const { test, list } of set.perCallFiltered) if (test(row)) merged.addBreaches(i, row, list, brokenCount(list, amount), null, amount, amount, now);
        for (const { currency, test, list } of set.perCallValued) {
          if (test && !test(row)) continue;
          const value = valueIn(currency);
          if (value !== null) merged.addBreaches(i, row, list, brokenCount(list, value), null, value, value, now);
        }
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
      // Counted by a policy in value that cannot value it: raised once per agent, asset and day.
      if (state.index.anyValued) {
        const unvaluedBy = firstUnvalued(state.index.setsOf(row.agent_id), row, valueIn);
        if (unvaluedBy) {
          const day = utcDay(row.event_time);
          const key = unvaluedKey(row.agent_id, row.asset, day);
          merged.add(i, row, key, () => unvaluedRecord(row, key, day, unvaluedBy));
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
    const opened = yield* recordOccurrences(groups.map((g) => g.occurrence), now, this.written);
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
    this.written.clear();
  }
}

/** The first policy counting in value that counts this record and cannot value it, if any (blocking ones first). */
function firstUnvalued(sets: readonly PolicySet[], row: EventRow, valueIn: (currency: string) => bigint | null): CompiledPolicy | undefined {
  let found: CompiledPolicy | undefined;
  for (const set of sets) {
    for (const policy of set.valued) {
      if (policy.match && !policy.match(row)) continue;
      if (valueIn(policy.currency!) !== null) continue;
      if (policy.action !== 'flag') return policy;
      found ??= policy;
    }
  }
  return found;
}

