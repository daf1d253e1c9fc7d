/** What the group commit promises its callers, and what it asks of the evaluator at the acknowledgement. */
import type { AuthorizationOutcome, AuthorizationRequest } from '../authorizations/decision.js';
import type { FieldError } from '../http/errors.js';
import type { Steps } from '../stores/sql.js';
import type { EventRow } from '../domain/record-row.js';

/** What happened to the rows of one request. */
export interface CommitOutcome {
  /** Rows appended to the log by this request. */
  stored: number;
  /** Rows the team had sent before (or earlier in the same group commit): not appended again. */
  duplicates: number;
  /**
   * Rows whose id the team had stored with other content (or sent earlier in the same group):
   * not appended, the first stays. `index` is the row's in the request; `claimedAs` a derived id.
   */
  conflicts: { index: number; id: string; fields: string[]; claimedAs?: string }[];
  /** Alerts opened by evaluating the stored rows. */
  alertsCreated: number;
  /** Rows stored with a remark (a zero-amount capture), by their index in the request's rows. */
  warnings: RowWarning[];
  /** Rows of a capture-only write that were not stored: the authorization was not held. */
  refused: number;
}

export interface RowWarning extends FieldError {
  row: number;
}

/**
 * Evaluation at the acknowledgement, in two halves: `prepare` may read ClickHouse (running totals
 * the process has not seen) before the transaction; `apply` runs inside it, on the rows the
 * commit claimed, and writes alerts in the same transaction. The parts inside are steps of the
 * group's transaction (src/stores/sql.ts).
 */
export interface AckEvaluator<Plan> {
  prepare(rows: readonly EventRow[], now: number, requests?: readonly AuthorizationRequest[]): Promise<Plan>;
  /**
   * The totals ledger, in the group's transaction: locked and read before apply and decide
   * (`lockLedger`), written after (`saveLedger`). With a `sharedLedger` (several instances count
   * into it), a group that cannot be evaluated fails whole (its records would otherwise go
   * uncounted for good); a ledger in memory is read again instead.
   */
  readonly sharedLedger?: boolean;
  lockLedger?(plan: Plan, now: number): Steps<void>;
  saveLedger?(plan: Plan): Steps<void>;
  apply(plan: Plan, fresh: readonly boolean[], now: number): Steps<number[]>;
  /**
   * After apply, in the same transaction: decides the group's authorizations, in order. Not
   * `isolated`: all in the group's transaction, and one that fails throws DecisionFailed (the group
   * is then committed again, isolated). `isolated`: each in a savepoint of its own, so one that
   * fails is answered with its error alone.
   */
  decide(plan: Plan, now: number, isolated: boolean): Steps<AuthorizationOutcome[]>;
  /** What deciding a request costs (the checks it lists), for the size of a group; 1 if absent. */
  weigh?(request: AuthorizationRequest): number;
  /** Forgets in-memory state that a rolled-back transaction may have changed. */
  reset(): void;
  /** Releases the hold of an authorization (captured or voided in this transaction). */
  release(authorizationId: string): boolean;
  /** A pending authorization a person approved: its hold counts on, to its new expiry. */
  extendHold(authorizationId: string, expiresAt: number): boolean;
}

export interface BacklogLimits {
  maxRows: number;
  maxBytes: number;
}

/** How much one group commit takes from the queue. */
export interface GroupLimits {
  /**
   * A group stops taking requests before it would pass this many records (a request is never
   * split: one larger than this is a group of its own). Default 2,000.
   */
  groupMaxRows?: number;
  /** Authorizations decided in one group: at most this many... Default 64. */
  groupMaxDecisions?: number;
  /**
   * ...and at most this many checks in all (each decision lists every limit of the policies of its
   * agent, about a microsecond each; one decision larger than this is decided alone). Default 20,000.
   */
  groupMaxChecks?: number;
}


/**
 * A decision failed in a group whose decisions were not isolated: the group is rolled back and
 * committed again with each decision in a savepoint, so that this one fails alone.
 */
export class DecisionFailed extends Error {
  constructor(readonly failure: unknown) {
    super('an authorization of the group failed to be decided');
    this.name = 'DecisionFailed';
  }
}
