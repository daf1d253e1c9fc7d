import { API_PREFIXES, defineRoute } from '../http/routes.js';
import { auditFilter, auditOrder, auditPage, type AuditQuery, type Filter } from './query.js';
import type { EventStore } from '../stores/clickhouse.js';
import { RECORD_COLUMNS, rowToRecord, type RecordRow } from './records.js';
import { auditSummary } from './summary.js';

/** The SDK's base URL may be <site>/api/v1, the bare site, or end in /v1 (sdk-wire.md). */
const SDK_PREFIXES = [...API_PREFIXES, ''];

const SDK_DOC =
  'Remote storage for the client SDK (@x402sentinel/x402 ApiStorage): the same answers as its own MemoryStorage ' +
  'for the same records. Also served under /v1 and at the site root.';

const EXAMPLE_RECORD = {
  id: '9f2c4e1a7b3d5f60',
  agent_id: 'research-bot',
  team: 'research',
  human_sponsor: null,
  amount: '0.001000',
  amount_raw: '0',
  asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  network: 'eip155:8453',
  scheme: 'exact',
  tx_hash: null,
  payer_address: '',
  payee_address: '0x2222222222222222222222222222222222222222',
  facilitator: null,
  endpoint: 'https://api.example.com/v1/search?q=spend',
  method: 'GET',
  status_code: 200,
  response_time_ms: 182,
  policy_id: null,
  policy_evaluation: 'allowed',
  budget_remaining: null,
  task_id: null,
  session_id: null,
  metadata: {},
  created_at: 1795250000000,
  settled_at: null,
  tags: ['search'],
};

export const auditQueryRoute = defineRoute<AuditQuery>({
  method: 'post',
  path: '/audit/query',
  operationId: 'auditQuery',
  summary: 'Audit records matching an AuditQuery, in its order, paged with offset and limit',
  description: `${SDK_DOC} Without orderBy, records come in the order they were stored; ties keep that order.`,
  tag: 'sdk',
  prefixes: SDK_PREFIXES,
  scope: 'read',
  body: 'audit-query.json',
  bodyExample: { agentId: 'research-bot', status: ['flagged', 'blocked'], orderBy: 'amount', order: 'desc', limit: 20 },
  responses: { 200: { description: 'The records, exactly as they were sent', schema: 'audit-records.json', example: [EXAMPLE_RECORD] } },
  async handler({ body, team, deps }) {
    const events = await deps.readEvents(team.teamId);
    const filter = auditFilter(team.teamId, body);
    const page = await auditPage(body, () => countRecords(events, filter));
    if (!page || page.limit === 0) return { body: [] };
    const order = await auditOrder(events, filter, body);
    const params: Record<string, unknown> = { ...filter.params, ...order.params, offset: page.offset };
    let window = 'OFFSET {offset:UInt64}';
    if (page.limit !== undefined) {
      window = 'LIMIT {limit:UInt64} OFFSET {offset:UInt64}';
      params.limit = page.limit;
    }
    const rows = await events.query<RecordRow>(`SELECT ${RECORD_COLUMNS} FROM events WHERE ${filter.where} ORDER BY ${order.orderBy} ${window}`, params);
    return { body: rows.map(rowToRecord) };
  },
});

async function countRecords(events: EventStore, filter: Filter): Promise<number> {
  const [row] = await events.query<{ n: string }>(`SELECT count() AS n FROM events WHERE ${filter.where}`, filter.params);
  return Number(row?.n ?? 0);
}

export const auditSummarizeRoute = defineRoute<AuditQuery>({
  method: 'post',
  path: '/audit/summarize',
  operationId: 'auditSummarize',
  summary: 'AuditSummary of the records matching an AuditQuery',
  description: `${SDK_DOC} One aggregation in ClickHouse; limit, offset and orderBy do not apply.`,
  tag: 'sdk',
  prefixes: SDK_PREFIXES,
  scope: 'read',
  body: 'audit-query.json',
  bodyExample: { startTime: 1795132800000, endTime: 1795219199999 },
  responses: {
    200: {
      description: 'The summary',
      schema: 'audit-summary.json',
      example: {
        total_spend: '0.0115',
        total_transactions: 3,
        unique_endpoints: 2,
        unique_agents: 1,
        avg_payment: '0.003833',
        max_payment: '0.01',
        by_agent: { 'research-bot': { spend: '0.011500', count: 3 } },
        by_endpoint: { 'https://api.example.com/v1/search': { spend: '0.001500', count: 2 }, 'https://api.example.com/v1/fetch': { spend: '0.010000', count: 1 } },
        by_team: { research: { spend: '0.011500', count: 3 } },
        violations: 0,
        period: { start: 1795132800000, end: 1795219199999 },
      },
    },
  },
  async handler({ body, team, deps }) {
    return { body: await auditSummary(await deps.readEvents(team.teamId), auditFilter(team.teamId, body), body) };
  },
});

export const auditCountRoute = defineRoute<AuditQuery>({
  method: 'post',
  path: '/audit/count',
  operationId: 'auditCount',
  summary: 'Number of records matching an AuditQuery',
  description: SDK_DOC,
  tag: 'sdk',
  prefixes: SDK_PREFIXES,
  scope: 'read',
  body: 'audit-query.json',
  bodyExample: { agentId: 'research-bot' },
  responses: { 200: { description: 'The count', schema: 'audit-count.json', example: { count: 1289 } } },
  async handler({ body, team, deps }) {
    return { body: { count: await countRecords(await deps.readEvents(team.teamId), auditFilter(team.teamId, body)) } };
  },
});

export const auditGetRoute = defineRoute({
  method: 'get',
  path: '/audit/:id',
  operationId: 'auditGet',
  summary: 'One audit record by id, or null',
  description: `${SDK_DOC} An unknown id answers 200 with null: a 404 would switch the SDK to its local storage for good.`,
  tag: 'sdk',
  prefixes: SDK_PREFIXES,
  neverNotFound: true,
  responses: { 200: { description: 'The record as it was sent, or null', schema: 'audit-record-or-null.json', example: EXAMPLE_RECORD } },
  async handler({ params, team, deps }) {
    const events = await deps.readEvents(team.teamId);
    const [row] = await events.query<RecordRow>(
      `SELECT ${RECORD_COLUMNS} FROM events WHERE team_id = {team:String} AND id = {id:String} LIMIT 1`,
      { team: team.teamId, id: params.id },
    );
    return { body: row ? rowToRecord(row) : null };
  },
});

export const auditRoutes = [auditQueryRoute, auditSummarizeRoute, auditCountRoute, auditGetRoute];
