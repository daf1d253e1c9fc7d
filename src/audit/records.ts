/** The columns a stored record is rebuilt from, as SELECT expressions. */
export const RECORD_COLUMNS = `id, agent_id, team_label, human_sponsor, amount, amount_text, amount_raw, asset, network, scheme,
  tx_hash, payer_address, payee_address, facilitator, endpoint, method, status_code, response_time_ms, policy_id,
  policy_evaluation, budget_remaining, task_id, session_id, metadata, toUnixTimestamp64Milli(event_time) AS created_ms,
  toUnixTimestamp64Milli(settled_at) AS settled_ms, tags, record_extra`;

export interface RecordRow {
  id: string;
  agent_id: string;
  team_label: string | null;
  human_sponsor: string | null;
  amount: string;
  amount_text: string;
  amount_raw: string;
  asset: string;
  network: string;
  scheme: string;
  tx_hash: string | null;
  payer_address: string;
  payee_address: string;
  facilitator: string | null;
  endpoint: string;
  method: string;
  status_code: number;
  response_time_ms: number;
  policy_id: string | null;
  policy_evaluation: string;
  budget_remaining: string | null;
  task_id: string | null;
  session_id: string | null;
  metadata: string;
  created_ms: string;
  settled_ms: string | null;
  tags: string[];
  record_extra: string;
}

/**
 * The record as it was sent: the SDK's AuditRecord fields from their columns (amount with its own
 * digits), then what `record_extra` kept (a network name before mapping, the method's own case,
 * ISO times, nulls where a column holds '', unknown fields). A record sent without some fields
 * (through POST /events) comes back in the SDK's full shape, with those fields at their defaults.
 */
export function rowToRecord(r: RecordRow): Record<string, unknown> {
  const record: Record<string, unknown> = {
    id: r.id,
    agent_id: r.agent_id,
    team: r.team_label,
    human_sponsor: r.human_sponsor,
    amount: r.amount_text || r.amount,
    // The SDK always sends "0" when it has no smallest-unit amount; a record sent without one reads the same.
    amount_raw: r.amount_raw || '0',
    asset: r.asset,
    network: r.network,
    scheme: r.scheme,
    tx_hash: r.tx_hash,
    payer_address: r.payer_address,
    payee_address: r.payee_address,
    facilitator: r.facilitator,
    endpoint: r.endpoint,
    method: r.method,
    status_code: Number(r.status_code),
    response_time_ms: Number(r.response_time_ms),
    policy_id: r.policy_id,
    policy_evaluation: r.policy_evaluation,
    budget_remaining: r.budget_remaining,
    task_id: r.task_id,
    session_id: r.session_id,
    metadata: JSON.parse(r.metadata) as unknown,
    created_at: Number(r.created_ms),
    settled_at: r.settled_ms === null ? null : Number(r.settled_ms),
    tags: r.tags,
  };
  if (r.record_extra) Object.assign(record, JSON.parse(r.record_extra) as Record<string, unknown>);
  return record;
}
