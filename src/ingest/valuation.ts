/** A record's value in its team's currency, set at acknowledgement from the team's book of rates. */
import { valuationText, valueAt, type RateBook, type Unvalued, type Valuation } from '../domain/rates.js';
import type { EventRow } from '../domain/record-row.js';
import type { FieldError } from '../http/errors.js';

const ZERO = /^0*(\.0*)?$/;

/** Sets the row's value, currency and valuation from `book`; returns the warning of a row left unvalued. */
export function valueRow(row: EventRow, book: RateBook): FieldError | undefined {
  return settleValue(row, book.currency, valueAt((asset) => book.histories.get(asset), row.asset, row.amount, row.event_time, book.currency));
}

/** Sets the row's value from a valuation, or leaves it unvalued with the warning that says why. */
function settleValue(row: EventRow, currency: string, valued: Valuation | Unvalued): FieldError | undefined {
  row.currency = currency;
  if (typeof valued === 'object') {
    row.value = valued.value;
    row.valuation = valuationText(valued);
    return undefined;
  }
  row.valuation = '';
  // Nothing paid is worth nothing in any currency: no rate needed, no warning.
  if (valued === 'no-rate' && ZERO.test(row.amount)) {
    row.value = '0';
    return undefined;
  }
  row.value = null;
  if (valued === 'too-large') return { field: 'amount', message: `is worth 10^20 ${currency} or more at its rate: too large to value; stored unvalued` };
  if (row.asset === '') return { field: 'asset', message: `is not given, so no rate values the amount in ${currency}: stored unvalued` };
  return {
    field: 'asset',
    message: `"${row.asset}" has no rate into ${currency} at ${new Date(row.event_time).toISOString()}: stored unvalued (give it one: PUT /api/v1/rates/${encodeURIComponent(row.asset)})`,
  };
}

/** A row whose amount cannot be known (amount_raw in an asset of unknown decimals): unvalued; its amount_raw warning says why. */
export function leaveUnvalued(row: EventRow, currency: string): void {
  row.currency = currency;
  row.value = null;
  row.valuation = '';
}
