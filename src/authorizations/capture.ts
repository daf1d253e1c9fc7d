/**
 * Where a payment meets its authorization: inside the ingest log's group commit, in the same
 * transaction that stores the record. Capture (by an ingested record or POST .../capture) and void
 * are taken by that one serialised writer, so of a capture and a void sent at once exactly one
 * wins, and a record the capture route writes is stored if and only if it captured.
 */
import type { FieldError } from '../http/errors.js';
import type { EventRow } from '../domain/record-row.js';
import { announceDecision } from './approvals.js';
import { toUnits } from '../domain/money.js';
import { revalued } from '../domain/rates.js';
import type { Steps } from '../stores/sql.js';
import { authorizationOf, captureHeld, statusOf, voidHeld, type AuthorizationRow } from './repository.js';

/** The id of the record POST /authorizations/:id/capture stores: a retry finds it claimed. */
export const captureRecordId = (authorizationId: string) => `${authorizationId}.capture`;

/**
 * Whether a record says the paid call went through: a 2xx or 3xx answer, or a settlement (the
 * published SDK sets settled_at and tx_hash from the payment's settlement header). A record of a
 * call that failed or was never paid (the SDK's status 0 or 402) does not.
 */
function saysPaid(row: EventRow): boolean {
  return (row.status_code >= 200 && row.status_code < 400) || row.settled_at !== null || row.tx_hash !== null;
}

/** What capturing did to a record, for the ingest answer. */
export interface CaptureEffect {
  /** The authorization whose hold this record released (captured), if any. */
  released?: string;
  warning?: FieldError;
}

/**
 * Before the claim, for the record of the capture route: whether it may be stored. It may when the
 * authorization is held, or when this very record captured it before (a retry: the claim then
 * finds the record stored and stores nothing). Anything else (voided, expired, captured by another
 * record or for another amount) refuses it: nothing is stored, and the route answers 409.
 */
export function* admitsCapture(row: EventRow, now: number): Steps<boolean> {
  const auth = yield* authorizationOf(row.team_id, row.authorization_id!);
  if (!auth || auth.agent_id !== row.agent_id) return false;
  if (auth.state === 'captured') return auth.captured_by === row.id && toUnits(auth.captured_amount!) === toUnits(row.amount);
  return statusOf(auth, now) === 'held';
}

/**
 * After the claim, for a newly stored record that carries an authorization of its team and agent:
 * a held one is captured, its hold released and the record's spend takes its place. One that is
 * not held (captured, voided, expired, unknown) captures nothing; the record's spend counts.
 *
 * A record of amount 0 would release the hold and count nothing, though a payment was made: the
 * published SDK records 0 when a payment client settles the 402 itself and it never saw a price.
 * So a zero-amount record that says the call went through captures the hold at its held amount,
 * and the record is stored with that amount as its spend (its amount as sent is kept, and given
 * back to the SDK); one that does not (the call failed or was not paid) leaves the hold alone,
 * until a priced record, a capture, a void or its expiry. Either way the ingest answer says so.
 */
export function* captureByRecord(row: EventRow, now: number, value?: (row: EventRow) => void): Steps<CaptureEffect> {
  // Locked on PostgreSQL: of two instances capturing (or voiding) it at once, one waits and finds it taken.
  const auth = yield* authorizationOf(row.team_id, row.authorization_id!, true);
  if (!auth || auth.agent_id !== row.agent_id || statusOf(auth, now) !== 'held') return {};
  // A record that names no asset (the published SDK's does not) paid in its authorization's: valued in it.
  const adopted = row.asset === '' && !!auth.asset && !!value;
  if (toUnits(row.amount) === 0n) {
    if (!saysPaid(row)) {
      return {
        warning: {
          field: 'amount',
          message: `is 0 and the call did not go through (status ${row.status_code}, no settlement): authorization ${auth.id} stays held until a priced record, a capture, a void or its expiry`,
        },
      };
    }
    if (adopted) row.asset = auth.asset!;
    row.amount = auth.amount;
    // Worth the held amount, by the rate the record was valued with (none: unvalued, never 0).
    if (adopted) value!(row);
    else {
      row.value = revalued(row.valuation, row.amount);
      if (row.value === null) row.valuation = '';
    }
    yield* captureRow(auth, row, now);
    return {
      released: auth.id,
      warning: {
        field: 'amount',
        message: `is 0 on a paid call: authorization ${auth.id} is captured at its held amount ${auth.amount}, which this record counts as spend`,
      },
    };
  }
  if (adopted) {
    row.asset = auth.asset!;
    value!(row);
  }
  yield* captureRow(auth, row, now);
  return adopted ? { released: auth.id, warning: adoptedWarning(row) } : { released: auth.id };
}

/** Said in place of the ingest answer's "no asset, unvalued": the record took its authorization's asset. */
const adoptedWarning = (row: EventRow): FieldError => ({
  field: 'asset',
  message: `is not given: the record captured authorization ${row.authorization_id}, whose asset ${row.asset} it was paid in and valued by${row.value === null ? ' (no rate values it: stored unvalued)' : ''}`,
});

function* captureRow(auth: AuthorizationRow, row: EventRow, now: number): Steps<void> {
  if (!(yield* captureHeld(auth, row.amount, row.id, now))) throw new Error(`authorization ${auth.id} was held but could not be captured`);
  // Asked for and approved by a person: its approve policies are not broken by paying it.
  if (auth.decided_by !== null && auth.decision === 'approved') row.approved_by_person = true;
}

/**
 * Voids a held authorization, or withdraws one waiting for a person (the agent gave up: its
 * approval alert is resolved and `authorization.decided` sent); voiding a voided one again changes
 * nothing (a retried void).
 */
export function* voidAuthorization(teamId: string, id: string, now: number): Steps<{ row: AuthorizationRow | undefined; released: boolean }> {
  const before = yield* authorizationOf(teamId, id, true);
  const released = yield* voidHeld(teamId, id, now);
  const row = yield* authorizationOf(teamId, id);
  if (released && before?.state === 'pending') yield* announceDecision(row!, 'Withdrawn: voided by the agent before anyone decided', now);
  return { row, released };
}
