import { API_PREFIXES, defineRoute, type RouteDeps } from '../http/routes.js';
import type { IngestPath } from './pipeline.js';
import type { IngestResult } from './ingestor.js';

/** What the routes that write records or authorizations take beyond every route's deps: the write path. */
export interface IngestRouteDeps extends RouteDeps {
  ingest: IngestPath;
}

const RESPONSES = {
  200: {
    description: 'The valid records are stored; invalid ones are listed in errors by index',
    schema: 'ingest-result.json',
    example: {
      ingested: 99,
      duplicates: 0,
      conflicts: 1,
      errors: [{ index: 4, field: 'amount', message: 'must be a non-negative decimal string with at most 20 integer and 18 fractional digits, e.g. "0.001"' }],
      warnings: [
        { index: 7, field: 'amount_raw', message: 'is in asset "WETH" whose decimals are unknown: stored, counted as unpriced, not as spend (send amount, or set ASSET_DECIMALS)' },
        { index: 12, field: 'id', message: 'id "call-12" was stored before with different content (amount): this record was not stored' },
      ],
      alerts_created: 0,
    },
  },
  503: { description: 'The event store failed: nothing of the batch was stored; retry', schema: 'error.json' },
};

const EXAMPLE_RECORD = {
  agent_id: 'research-agent',
  endpoint: 'https://api.example.com/v1/search?q=x',
  method: 'GET',
  amount: '0.001000',
  network: 'eip155:8453',
  asset: 'USDC',
  policy_evaluation: 'allowed',
  created_at: 1795243200000,
};

export const ingestEvents = defineRoute<{ events: unknown[] }, unknown, IngestRouteDeps>({
  method: 'post',
  path: '/events',
  operationId: 'ingestEvents',
  summary: 'Ingest a batch of 1 to 100 audit events',
  description:
    'Each record is validated on its own: valid records are stored (exactly once per id and team) and invalid ' +
    'ones are reported by index. A batch with no valid record is a 400 listing them in details. Answered only ' +
    'after the records are stored. A record whose id the team stored before with different content (agent, ' +
    'endpoint, amount, asset, network, payee, or a tx_hash on one side only) is a conflict: not stored, the first ' +
    'stays, counted in conflicts with a warning. The same id with another non-null tx_hash is another payment: ' +
    'stored as <id>~tx~<first 16 hex of sha256(tx_hash)>, and read back with the id as sent.',
  tag: 'ingest',
  scope: 'ingest',
  batchField: 'events',
  body: 'events-batch.json',
  bodyExample: { events: [EXAMPLE_RECORD] },
  responses: RESPONSES,
  async handler({ body, team, deps, log, plainBody }): Promise<{ body: IngestResult }> {
    return { body: await deps.ingest.ingestor.ingest(team.teamId, body.events, 'events', log, plainBody) };
  },
});

export const ingestAuditBatch = defineRoute<{ records: unknown[] }, unknown, IngestRouteDeps>({
  method: 'post',
  path: '/audit/batch',
  // The SDK's base URL may be <site>/api/v1, <site>/v1 or the bare site.
  prefixes: [...API_PREFIXES, ''],
  operationId: 'ingestAuditBatch',
  summary: 'Ingest a batch of audit records from the client SDK (ApiStorage), of any size up to MAX_BODY_BYTES',
  description:
    'The SDK retries a failed batch up to 3 times: records are de-duplicated by id, so a retry stores nothing twice. ' +
    'Its ids hash agent, endpoint, millisecond and amount, so equal payments in one millisecond share an id: with ' +
    'distinct tx_hash they are stored as distinct payments. Same rules as POST /events.',
  tag: 'ingest',
  scope: 'ingest',
  batchField: 'records',
  body: 'audit-batch.json',
  bodyExample: { records: [{ id: '9f2c1a7b3d4e5f60', ...EXAMPLE_RECORD }] },
  responses: RESPONSES,
  async handler({ body, team, deps, log, plainBody }): Promise<{ body: IngestResult }> {
    return { body: await deps.ingest.ingestor.ingest(team.teamId, body.records, 'sdk', log, plainBody) };
  },
});

export const ingestRoutes = [ingestEvents, ingestAuditBatch];
