/**
 * Authorizations: ask before paying. POST decides at once (in the next group commit of the ingest
 * log, against the running totals and the open holds), GET reads them, void releases a hold.
 */
import { decodeCursor, keysetPage } from '../http/cursor.js';
import { assertKeyStillWorks } from '../http/auth.js';
import { ApiError } from '../http/errors.js';
import { defineRoute, type RouteDeps, type RouteSpec } from '../http/routes.js';
import type { IngestRouteDeps } from '../ingest/routes.js';
import { parseQueryTime } from '../http/validation.js';
import { toUnits } from '../domain/money.js';
import { caip2Network } from '../domain/networks.js';
import { categorize } from '../domain/categories.js';
import { DEFAULT_EXPIRES_IN_S, type AuthorizationRequest } from './decision.js';
import { captureRecordId, voidAuthorization } from './capture.js';
import { decidePending, type DecisionWaiters } from './approvals.js';
import {
  authorizationBody,
  findAuthorization,
  listAuthorizations,
  statusOf,
  type AuthorizationCursor,
  type AuthorizationRow,
  type AuthorizationStatus,
} from './repository.js';

interface AuthorizationCreate {
  agent_id: string;
  endpoint: string;
  amount?: string;
  amount_raw?: string;
  asset?: string;
  network?: string;
  payee_address?: string;
  category?: string;
  tags?: string[];
  expires_in_s?: number;
  idempotency_key?: string;
}

const EXAMPLE = {
  id: 'auth_oc62b4k2a7q3x9m5c1v8n6z0',
  decision: 'approved',
  status: 'held',
  agent_id: 'research-bot',
  endpoint: 'https://api.example.com/v1/search',
  amount: '0.25',
  asset: 'USDC',
  network: 'eip155:8453',
  payee_address: null,
  expires_at: '2026-11-23T12:05:00.000Z',
  created_at: '2026-11-23T12:00:00.000Z',
  checks: [
    {
      policy_id: 'pol_oc5z2hitduo6lmewdoyy6csy',
      policy_name: 'research budget',
      action: 'block',
      kind: 'daily',
      window: { start: '2026-11-23T00:00:00.000Z', end: '2026-11-24T00:00:00.000Z' },
      limit: '100',
      spent: '41.5',
      held: '0.75',
      remaining: '57.75',
      breaks: false,
    },
  ],
  reasons: [],
  captured_amount: null,
  captured_at: null,
  captured_by: null,
  voided_at: null,
  idempotency_key: 'task-8812-call-3',
  pending_until: null,
  decided_at: '2026-11-23T12:00:00.000Z',
  decided_by: null,
  decision_note: null,
};

const notFound = (id: string) => new ApiError('not_found', `No authorization "${id}" in this team`);

export const createAuthorizationRoute = defineRoute<AuthorizationCreate, unknown, IngestRouteDeps>({
  method: 'post',
  path: '/authorizations',
  operationId: 'createAuthorization',
  summary: 'Ask whether an agent may pay, and hold the amount if it may',
  description:
    "Decides at once against the team's active policies for the agent, as ingest evaluates them (per_call, per_hour, daily, weekly " +
    "and monthly in the policy's time zone, per_endpoint), counting what the agent spent in each window plus what its open " +
    'authorizations hold. A block policy that would be broken declines (and raises or updates that breach\'s alert, with ' +
    '`details.declined`); a flag policy approves and says so in `reasons`. An approval holds its amount until it is ' +
    'captured, voided or expires (`expires_in_s`, default 300, at most 3600). Decisions for one agent are serialised ' +
    'against one set of totals: concurrent requests never approve more than the limits allow. The same ' +
    '`idempotency_key` returns the same authorization. Answered once the authorization is durable.',
  tag: 'authorizations',
  scope: 'ingest',
  body: 'authorization-create.json',
  bodyExample: { agent_id: 'research-bot', endpoint: 'https://api.example.com/v1/search', amount: '0.25', asset: 'USDC', idempotency_key: 'task-8812-call-3' },
  responses: {
    200: { description: 'The decision (approved or declined) and the authorization', schema: 'authorization.json', example: EXAMPLE },
    503: { description: "The agent's running totals could not be read (event store behind or down): nothing decided, retry", schema: 'error.json' },
  },
  async handler({ body, team, deps }) {
    let domain: string;
    try {
      const url = new URL(body.endpoint);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
      domain = url.hostname.toLowerCase();
    } catch {
      throw new ApiError('validation_failed', 'Request body is invalid: endpoint must be an absolute http or https URL', [
        { field: 'endpoint', message: 'must be an absolute http or https URL' },
      ]);
    }
    // Checked now, as a record would be: a capture writes one with it.
    if (body.network !== undefined && caip2Network(body.network) === undefined) {
      throw new ApiError('validation_failed', 'Request body is invalid: network must be CAIP-2 (<namespace>:<reference>) or a known x402 network name', [
        { field: 'network', message: 'must be CAIP-2 (<namespace>:<reference>) or a known x402 network name' },
      ]);
    }
    const amount = await requestedAmount(body, (asset, raw) => deps.ingest.ingestor.amountFromRaw(team.teamId, asset, raw));
    const request: AuthorizationRequest = {
      teamId: team.teamId,
      agentId: body.agent_id,
      endpoint: body.endpoint,
      domain,
      amount,
      asset: body.asset ?? null,
      network: body.network ?? null,
      payeeAddress: body.payee_address ?? null,
      category: categorize(body.category, undefined, body.tags ?? [], domain),
      tags: body.tags ?? [],
      expiresInS: body.expires_in_s ?? DEFAULT_EXPIRES_IN_S,
      idempotencyKey: body.idempotency_key ?? null,
    };
    const row = await deps.ingest.commit.authorize(request);
    return { body: authorizationBody(row) };
  },
});

const invalid = (field: string, message: string) => new ApiError('validation_failed', `Request body is invalid: ${field} ${message}`, [{ field, message }]);

/** Largest amount a record can hold: 20 integer digits, 18 decimals. */
const AMOUNT = /^[0-9]{1,20}(\.[0-9]{1,18})?$/;

/**
 * The amount asked for: `amount`, or `amount_raw` made an amount by the asset's decimals (the
 * asset table records use), never guessed: an asset whose decimals are unknown is a 400 naming it.
 */
async function requestedAmount(body: AuthorizationCreate, fromRaw: (asset: string, raw: string) => Promise<string | undefined>): Promise<string> {
  if (body.amount_raw === undefined) {
    if (body.amount === undefined) throw invalid('amount', 'is required (or amount_raw, with asset)');
    return body.amount;
  }
  if (body.asset === undefined) throw invalid('asset', "is required with amount_raw: the asset's decimals make it an amount");
  const amount = await fromRaw(body.asset, body.amount_raw);
  if (amount === undefined) {
    throw invalid(
      'amount_raw',
      `is in ${body.asset}, whose decimals are unknown: send amount, or give the asset its decimals (ASSET_DECIMALS, or "decimals" in its rate: PUT /api/v1/rates/${encodeURIComponent(body.asset)})`,
    );
  }
  if (!AMOUNT.test(amount)) throw invalid('amount_raw', `is ${amount} ${body.asset}: more than an amount can hold (10^20)`);
  if (body.amount !== undefined && toUnits(body.amount) !== toUnits(amount)) throw invalid('amount_raw', `is ${amount} ${body.asset}, not the amount ${body.amount} sent with it`);
  return amount;
}

/** What a wait for a person's decision takes: this process's waiters. */
export interface WaitRouteDeps extends RouteDeps {
  decisionWaiters: DecisionWaiters;
}

export const getAuthorizationRoute = defineRoute<unknown, { wait?: number }, WaitRouteDeps>({
  method: 'get',
  path: '/authorizations/:id',
  operationId: 'getAuthorization',
  summary: 'One authorization, with what became of its hold; `wait` long-polls a pending one',
  description:
    'With `wait` (seconds, at most 60) and a pending authorization: answered as soon as a person approves or denies it or its ' +
    'wait ends, else after `wait` seconds as it is (still pending: ask again). A waiting request costs the service a timer, ' +
    'no polling. Without `wait`, or when it is not pending, answered at once. A key revoked or expired while it waits is ' +
    'answered 401, not the decision; one whose team was suspended meanwhile, 403 team_suspended.',
  tag: 'authorizations',
  query: 'authorization-get-query.json',
  responses: {
    200: { description: 'The authorization', schema: 'authorization.json', example: EXAMPLE },
    401: { description: 'The key is missing, unknown, or was revoked or expired (also while it waited)', schema: 'error.json' },
  },
  async handler({ params, query, team, deps }) {
    let row = await findAuthorization(deps.db, team.teamId, params.id!);
    if (!row) throw notFound(params.id!);
    const wait = query.wait ?? 0;
    if (wait > 0 && statusOf(row) === 'pending') {
      // Until the decision wakes it, or the sooner of the wait asked for and the end of the person's.
      await deps.decisionWaiters.wait(row.id, Math.min(wait * 1000, row.expires_at - Date.now()));
      // A key revoked or expired while it waited is not told the decision.
      await assertKeyStillWorks(deps.keys, team);
      row = (await findAuthorization(deps.db, team.teamId, row.id))!;
    }
    return { body: authorizationBody(row) };
  },
});

/** Approve and deny: a person's decision on a pending authorization, the first one winning. */
function decisionRoute(verdict: 'approve' | 'deny') {
  const approve = verdict === 'approve';
  return defineRoute<{ note?: string }, unknown, IngestRouteDeps>({
    method: 'post',
    path: `/authorizations/:id/${verdict}`,
    operationId: approve ? 'approveAuthorization' : 'denyAuthorization',
    summary: approve ? 'Approve a payment waiting for a person' : 'Deny a payment waiting for a person',
    description:
      (approve
        ? 'The agent may pay: the authorization is held (`status: held`) for the `expires_in_s` it asked for, from now, and is captured or voided like any approval. '
        : 'The agent may not pay: the authorization is declined and its hold released at once. ') +
      'Only a pending one can be decided, and the first decision wins: a second (or one after its wait ended) is a 409 with ' +
      'the authorization in `details.authorization`. The deciding key\'s name and the `note` are kept (`decided_by`, `decision_note`, ' +
      'and in `reasons`); its approval alert is resolved, and `authorization.decided` is sent to the webhooks. Needs the ' +
      '`approve` scope (or admin). Answered once durable.',
    tag: 'authorizations',
    scope: 'approve',
    body: 'authorization-decision.json',
    bodyWhenEmpty: {},
    bodyExample: { note: approve ? 'ok for the quarterly report' : 'not this vendor' },
    responses: {
      200: {
        description: approve ? 'The authorization, approved and held' : 'The authorization, declined',
        schema: 'authorization.json',
        example: approve
          ? { ...EXAMPLE, decided_at: '2026-11-23T12:01:00.000Z', decided_by: 'finance-oncall', decision_note: 'ok for the quarterly report' }
          : { ...EXAMPLE, decision: 'declined', status: 'declined', decided_at: '2026-11-23T12:01:00.000Z', decided_by: 'finance-oncall', decision_note: 'not this vendor' },
      },
      409: { description: 'Not pending: decided already (by a person or the policies) or its wait ended', schema: 'error.json' },
    },
    async handler({ params, body, team, deps }) {
      const id = params.id!;
      const note = body.note ?? null;
      const { outcome, now } = await deps.ingest.commit.serialized(function* (now) {
        const outcome = yield* decidePending(team.teamId, id, verdict, team.keyName, note, now);
        if (outcome.decided && outcome.row) {
          // Memory follows what is written: approved, its hold counts on from now; denied, it is released.
          if (approve) deps.ingest.evaluator?.extendHold(id, outcome.row.expires_at);
          else deps.ingest.evaluator?.release(id);
        }
        return { outcome, now };
      });
      if (!outcome.row) throw notFound(id);
      if (!outcome.decided) {
        const status = statusOf(outcome.row, now);
        throw new ApiError('conflict', `Authorization "${id}" is ${status}: only a pending one can be ${approve ? 'approved' : 'denied'}`, {
          status,
          authorization: authorizationBody(outcome.row, now),
        });
      }
      return { body: authorizationBody(outcome.row, now) };
    },
  });
}

export const approveAuthorizationRoute = decisionRoute('approve');
export const denyAuthorizationRoute = decisionRoute('deny');

const isCursor = (v: unknown): v is AuthorizationCursor =>
  typeof v === 'object' && v !== null && typeof (v as AuthorizationCursor).createdAt === 'number' && typeof (v as AuthorizationCursor).id === 'string';

export const listAuthorizationsRoute = defineRoute<unknown, { agent?: string; status?: AuthorizationStatus; from?: string; to?: string; limit?: number; cursor?: string }>({
  method: 'get',
  path: '/authorizations',
  operationId: 'listAuthorizations',
  summary: 'Authorizations of the team, newest first',
  description: 'Filters: `agent`, `status`, and `from`/`to` (created in that range; Unix ms or ISO 8601). Pass `next_cursor` as `cursor` for the next page.',
  tag: 'authorizations',
  query: 'authorizations-query.json',
  responses: { 200: { description: 'A page of authorizations', schema: 'authorization-page.json', example: { data: [EXAMPLE], next_cursor: null } } },
  async handler({ query, team, deps }) {
    const now = Date.now();
    const filter = {
      agent: query.agent,
      status: query.status,
      from: query.from === undefined ? undefined : parseQueryTime(query.from, 'from'),
      to: query.to === undefined ? undefined : parseQueryTime(query.to, 'to'),
    };
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isCursor);
    const { rows, next_cursor } = await keysetPage(
      query.limit ?? 50,
      (n) => listAuthorizations(deps.db, team.teamId, filter, { limit: n, after }, now),
      (last) => ({ createdAt: last.created_at, id: last.id }),
    );
    return { body: { data: rows.map((r) => authorizationBody(r, now)), next_cursor } };
  },
});

/**
 * The 409 of a void or capture that lost (or came too late): the authorization's real state in the
 * message and, whole, in `details.authorization`.
 */
function notHeld(row: AuthorizationRow, action: 'voided' | 'captured', now = Date.now(), why?: string): ApiError {
  const status = statusOf(row, now);
  return new ApiError('conflict', why ?? `Authorization "${row.id}" is ${status}: only a held one can be ${action}`, {
    status,
    authorization: authorizationBody(row, now),
  });
}

export const voidAuthorizationRoute = defineRoute<unknown, unknown, IngestRouteDeps>({
  method: 'post',
  path: '/authorizations/:id/void',
  operationId: 'voidAuthorization',
  summary: 'Release the hold of an approved authorization, or withdraw one waiting for a person',
  description:
    'The agent will not pay (or not now): its amount stops counting against the limits at once. A held authorization can be ' +
    'voided, and so can one still waiting for a person (the agent gives up: its approval alert is resolved and authorization.decided sent); a voided one answers 200 again (a retried void), anything else 409 with the authorization in `details.authorization`. ' +
    'Voids and captures are decided one after the other in the ingest log\'s commit: of a void and a capture sent at once, exactly ' +
    'one wins. Answered once durable.',
  tag: 'authorizations',
  scope: 'ingest',
  responses: {
    200: { description: 'The authorization, voided', schema: 'authorization.json', example: { ...EXAMPLE, status: 'voided', voided_at: '2026-11-23T12:01:10.000Z' } },
    409: { description: 'Not held: captured, expired or declined', schema: 'error.json' },
  },
  async handler({ params, team, deps }) {
    const id = params.id!;
    const { row, now } = await deps.ingest.commit.serialized(function* (now) {
      const voided = yield* voidAuthorization(team.teamId, id, now);
      if (voided.released) deps.ingest.evaluator?.release(id);
      return { row: voided.row, now };
    });
    if (!row) throw notFound(id);
    if (row.state !== 'voided') throw notHeld(row, 'voided', now);
    return { body: authorizationBody(row, now) };
  },
});

interface AuthorizationCaptureBody {
  amount?: string;
  tx_hash?: string;
  payer_address?: string;
  network?: string;
  settled_at?: string | number;
  status_code?: number;
  response_time_ms?: number;
}

/** The settlement's facts a capture stores on its record, as sent (the record's validation checks them). */
const SETTLEMENT_FIELDS = ['tx_hash', 'payer_address', 'network', 'settled_at', 'status_code', 'response_time_ms'] as const;

export const captureAuthorizationRoute = defineRoute<AuthorizationCaptureBody, unknown, IngestRouteDeps>({
  method: 'post',
  path: '/authorizations/:id/capture',
  operationId: 'captureAuthorization',
  summary: 'Capture a held authorization for what was paid',
  description:
    'For a client that does not send its own audit record with `authorization_id`: stores the payment as a record ' +
    '(id `<authorization id>.capture`) carrying the authorization, whose hold it replaces. `amount` is more than 0 and at most ' +
    'the held amount (default: all of it); the rest is released. Decided in the ingest log\'s commit, one after the other with ' +
    'voids and records: the record is stored if and only if this answers 200. The same capture sent again (same amount) answers ' +
    '200 with the captured authorization and stores nothing twice; anything else not held answers 409, with the authorization ' +
    'in `details.authorization`. The settlement\'s `tx_hash`, `payer_address`, `network` (default the authorization\'s), ' +
    '`settled_at`, `status_code` and `response_time_ms` are stored on the record, checked as a record\'s fields are.',
  tag: 'authorizations',
  scope: 'ingest',
  body: 'authorization-capture.json',
  bodyWhenEmpty: {},
  bodyExample: { amount: '0.2', tx_hash: '0x8f1d5c3e9a7b2d4f6e8c0a1b3d5f7e9c2a4b6d8f0e1c3a5b7d9f2e4c6a8b0d1e', payer_address: '0x1111111111111111111111111111111111111111', network: 'eip155:8453', settled_at: '2026-11-23T12:00:03.000Z', status_code: 200 },
  responses: {
    200: { description: 'The authorization, captured', schema: 'authorization.json', example: { ...EXAMPLE, status: 'captured', captured_amount: '0.2', captured_at: '2026-11-23T12:00:04.000Z', captured_by: `${EXAMPLE.id}.capture` } },
    409: { description: 'Not held: voided, expired, declined, or captured otherwise', schema: 'error.json' },
  },
  async handler({ params, body, team, deps }) {
    const row = await findAuthorization(deps.db, team.teamId, params.id!);
    if (!row) throw notFound(params.id!);
    const amount = body.amount ?? row.amount;
    const units = toUnits(amount);
    if (units === 0n) {
      throw new ApiError('validation_failed', 'Request body is invalid: amount must be more than 0 (nothing paid: void the authorization)', [
        { field: 'amount', message: 'must be more than 0 (nothing paid: void the authorization)' },
      ]);
    }
    if (units > toUnits(row.amount)) {
      throw new ApiError('validation_failed', `Request body is invalid: amount must be at most the held amount ${row.amount}`, [
        { field: 'amount', message: `must be at most the held amount ${row.amount}` },
      ]);
    }
    const record = {
      id: captureRecordId(row.id),
      agent_id: row.agent_id,
      endpoint: row.endpoint,
      method: 'POST',
      amount,
      authorization_id: row.id,
      ...(row.asset === null ? {} : { asset: row.asset }),
      ...(row.network === null ? {} : { network: row.network }),
      ...(row.payee_address === null ? {} : { payee_address: row.payee_address }),
      ...Object.fromEntries(SETTLEMENT_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, body[f]])),
    };
    const captured = await deps.ingest.ingestor.captureRecord(team.teamId, record);
    const after = (await findAuthorization(deps.db, team.teamId, row.id))!;
    if (captured) return { body: authorizationBody(after) };
    if (after.state === 'captured' && after.captured_by === record.id) {
      throw notHeld(after, 'captured', undefined, `Authorization "${row.id}" was captured for ${after.captured_amount}, not ${amount}`);
    }
    throw notHeld(after, 'captured');
  },
});

export const authorizationRoutes: RouteSpec[] = [
  createAuthorizationRoute,
  listAuthorizationsRoute,
  getAuthorizationRoute,
  approveAuthorizationRoute,
  denyAuthorizationRoute,
  voidAuthorizationRoute,
  captureAuthorizationRoute,
];
