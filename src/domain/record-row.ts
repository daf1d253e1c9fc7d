/** Which route received a record. */
export type IngestSource = 'events' | 'sdk';

/** A row of the ClickHouse `events` table (schema/clickhouse/001_events.sql); times in Unix ms. */
export interface EventRow {
  team_id: string;
  event_time: number;
  id: string;
  agent_id: string;
  endpoint: string;
  domain: string;
  method: string;
  category: string;
  amount: string;
  amount_text: string;
  amount_raw: string;
  asset: string;
  network: string;
  scheme: string;
  policy_evaluation: string;
  team_label: string | null;
  tx_hash: string | null;
  payer_address: string;
  payee_address: string;
  facilitator: string | null;
  status_code: number;
  response_time_ms: number;
  human_sponsor: string | null;
  policy_id: string | null;
  budget_remaining: string | null;
  task_id: string | null;
  session_id: string | null;
  tags: string[];
  /** JSON text of the metadata object. */
  metadata: string;
  settled_at: number | null;
  received_at: number;
  source: IngestSource;
  /** JSON of what the columns do not keep of the record as sent; '' when nothing (see recordExtra). */
  record_extra: string;
  /** Storage order (microseconds since the epoch, increasing), assigned by the writer. */
  ingest_seq: number;
  /** In `currency`: the amount times the rate valid at event_time, rounded half-even to 18 places; null: unvalued. */
  value: string | null;
  /** The team's currency when the record was acknowledged. */
  currency: string;
  /** JSON of the rate (and conversion) the value used; '' when unvalued, or nothing was paid. */
  valuation: string;
  /**
   * Not a column: the authorization this record captures, from the field or metadata.authorization_id
   * (the field is kept in record_extra, the metadata as sent).
   */
  authorization_id?: string;
  /**
   * Not a column: every string of the row is free of what TSV escapes (backslash, tab, newline, CR,
   * NUL), known from a body that scanned plain; rowToTsv then copies them as they are.
   */
  plain?: boolean;
  /**
   * Not a column: set when this record captured an authorization a person approved (an approve
   * policy asked for one): the payment was asked for and allowed, so it breaks no approve policy.
   */
  approved_by_person?: true;
}
