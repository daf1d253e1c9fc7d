import { audited } from '../audit-log/record.js';
import { decodeCursor, isSeqPosition, keysetPage } from '../http/cursor.js';
import { ApiError } from '../http/errors.js';
import { defineRoute, type AuthedContext, type RouteDeps } from '../http/routes.js';
import type { Dispatcher } from './dispatcher.js';
import { NO_STORE } from '../teams/key-routes.js';
import { urlProblem } from './address.js';
import { perform } from '../stores/sql.js';
import { shownUrl } from '../domain/shown-url.js';
import { enqueueEvent } from './outbox.js';
import {
  createEndpoint,
  deleteEndpoint,
  findDelivery,
  findEndpoint,
  listDeliveries,
  listEndpoints,
  rotateSecret,
  TooManyEndpoints,
  updateEndpoint,
  MAX_ENDPOINTS_PER_TEAM,
  PREVIOUS_SECRET_MS,
  type Delivery,
  type DeliveryStatus,
  type EventType,
  type WebhookEndpoint,
  type WebhookFormat,
} from './repository.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** An endpoint as the API shows it: never its secret (that is added once, at creation or rotation), its URL masked (src/domain/shown-url.ts). */
const toBody = (e: WebhookEndpoint) => ({
  id: e.id,
  url: shownUrl(e.url, e.format),
  description: e.description,
  events: e.events,
  format: e.format,
  active: e.active,
  disabledAt: iso(e.disabledAt),
  disabledReason: e.disabledReason,
  secretRotatedAt: e.previousSecretUntil === null ? null : iso(e.previousSecretUntil - PREVIOUS_SECRET_MS),
  createdAt: iso(e.createdAt)!,
  updatedAt: iso(e.updatedAt)!,
});

/** What the audit log records of an endpoint: its settings, never its secret, its URL masked. */
const settings = (e: WebhookEndpoint) => ({ url: shownUrl(e.url, e.format), description: e.description, events: e.events, format: e.format, active: e.active });

const notFound = (id: string) => new ApiError('not_found', `No webhook "${id}" in this team`);

/** A URL the service may not deliver to is a 400 naming `url`. */
async function checkUrl(ctx: AuthedContext<unknown, unknown>, url: string): Promise<void> {
  const problem = await urlProblem(url, ctx.deps.config.webhooks);
  if (problem) throw new ApiError('validation_failed', `Request body is invalid: url ${problem}`, [{ field: 'url', message: problem }]);
}

const EXAMPLE = {
  id: 'whk_4k2m9q7w8e1r5t3y6u0p',
  url: 'https://hooks.example.com/spendscope',
  description: 'on-call',
  events: ['alert.opened', 'alert.escalated'],
  format: 'standard',
  active: true,
  disabledAt: null,
  disabledReason: null,
  secretRotatedAt: null,
  createdAt: '2026-11-23T10:00:00.000Z',
  updatedAt: '2026-11-23T10:00:00.000Z',
};

const DESCRIPTION =
  'Alert events are delivered to each active endpoint that lists their type: alert.opened (the first occurrence of ' +
  'a breach), alert.escalated (its severity rose), alert.resolved, alert.reopened. standard endpoints get signed JSON ' +
  '(Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature); slack endpoints a Slack message.';

interface WebhookCreate {
  url: string;
  description?: string;
  events: EventType[];
  format?: WebhookFormat;
  active?: boolean;
}

export const createWebhookRoute = defineRoute<WebhookCreate>({
  method: 'post',
  path: '/webhooks',
  operationId: 'createWebhook',
  summary: 'Add a webhook endpoint (a standard one gets its secret, shown once)',
  description: `${DESCRIPTION} A team has at most ${MAX_ENDPOINTS_PER_TEAM}.`,
  tag: 'webhooks',
  body: 'webhook-create.json',
  bodyExample: { url: 'https://hooks.example.com/spendscope', events: ['alert.opened', 'alert.escalated'], description: 'on-call' },
  responses: {
    201: { description: 'The endpoint, with its secret this once', schema: 'webhook.json', example: { ...EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } },
    409: { description: `The team has ${MAX_ENDPOINTS_PER_TEAM} endpoints already`, schema: 'error.json' },
  },
  async handler(ctx) {
    const { body, team, deps } = ctx;
    await checkUrl(ctx, body.url);
    const input = { url: body.url, description: body.description ?? null, events: body.events, format: body.format ?? 'standard', active: body.active ?? true };
    let endpoint: WebhookEndpoint;
    try {
      endpoint = await audited(ctx, async (sql) => {
        const created = await createEndpoint(sql, deps.secrets, team.teamId, input);
        return { result: created, log: { action: 'webhook.create', resourceType: 'webhook', resourceId: created.id, before: null, after: settings(created) } };
      });
    } catch (err) {
      if (err instanceof TooManyEndpoints) throw new ApiError('conflict', `This team has ${MAX_ENDPOINTS_PER_TEAM} webhook endpoints already: delete one first`);
      throw err;
    }
    return {
      status: 201,
      headers: { ...NO_STORE, Location: `/api/v1/webhooks/${endpoint.id}` },
      body: { ...toBody(endpoint), ...(endpoint.secret ? { secret: endpoint.secret } : {}) },
    };
  },
});

export const listWebhooksRoute = defineRoute({
  method: 'get',
  path: '/webhooks',
  operationId: 'listWebhooks',
  summary: "The team's webhook endpoints, oldest first",
  tag: 'webhooks',
  scope: 'admin',
  responses: { 200: { description: 'The endpoints', schema: 'webhook-list.json', example: { data: [EXAMPLE] } } },
  async handler({ team, deps }) {
    return { body: { data: (await listEndpoints(deps.db, deps.secrets, team.teamId)).map(toBody) } };
  },
});

export const getWebhookRoute = defineRoute({
  method: 'get',
  path: '/webhooks/:id',
  operationId: 'getWebhook',
  summary: 'One webhook endpoint',
  tag: 'webhooks',
  scope: 'admin',
  responses: { 200: { description: 'The endpoint', schema: 'webhook.json', example: EXAMPLE } },
  async handler({ params, team, deps }) {
    const endpoint = await findEndpoint(deps.db, deps.secrets, team.teamId, params.id!);
    if (!endpoint) throw notFound(params.id!);
    return { body: toBody(endpoint) };
  },
});

export const updateWebhookRoute = defineRoute<{ url?: string; description?: string | null; events?: EventType[]; active?: boolean }>({
  method: 'patch',
  path: '/webhooks/:id',
  operationId: 'updateWebhook',
  summary: 'Change a webhook endpoint: url, description, events, active',
  description: 'active true re-enables an endpoint disabled after failing for 24 hours. The format cannot change.',
  tag: 'webhooks',
  body: 'webhook-patch.json',
  bodyExample: { events: ['alert.opened', 'alert.escalated', 'alert.resolved'] },
  responses: { 200: { description: 'The endpoint as changed', schema: 'webhook.json', example: EXAMPLE } },
  async handler(ctx) {
    const { params, body, team, deps } = ctx;
    if (body.url !== undefined) await checkUrl(ctx, body.url);
    const endpoint = await audited(ctx, async (sql) => {
      const before = await findEndpoint(sql, deps.secrets, team.teamId, params.id!, true);
      const after = before && (await updateEndpoint(sql, deps.secrets, team.teamId, params.id!, body));
      if (!before || !after) return { result: undefined };
      // A new token in the same URL shows as the old one did: the log still says the URL changed.
      const maskedChanges = after.url !== before.url ? ['url'] : [];
      return { result: after, log: { action: 'webhook.update', resourceType: 'webhook', resourceId: after.id, before: settings(before), after: settings(after), maskedChanges } };
    });
    if (!endpoint) throw notFound(params.id!);
    return { body: toBody(endpoint) };
  },
});

export const deleteWebhookRoute = defineRoute({
  method: 'delete',
  path: '/webhooks/:id',
  operationId: 'deleteWebhook',
  summary: 'Delete a webhook endpoint',
  description: 'Nothing more is sent to it, pending deliveries included.',
  tag: 'webhooks',
  responses: { 204: { description: 'Deleted' } },
  async handler(ctx) {
    const { params, team, deps } = ctx;
    const deleted = await audited(ctx, async (sql) => {
      const before = await findEndpoint(sql, deps.secrets, team.teamId, params.id!, true);
      if (!before || !(await deleteEndpoint(sql, team.teamId, params.id!))) return { result: false };
      return { result: true, log: { action: 'webhook.delete', resourceType: 'webhook', resourceId: before.id, before: settings(before), after: null } };
    });
    if (!deleted) throw notFound(params.id!);
    return { status: 204, body: undefined };
  },
});

export const rotateWebhookSecretRoute = defineRoute({
  method: 'post',
  path: '/webhooks/:id/rotate-secret',
  operationId: 'rotateWebhookSecret',
  summary: "Replace a standard endpoint's secret (shown once); the old one signs too for 24 hours",
  description: 'During those 24 hours each delivery carries two signatures, one per secret, so a receiver can switch at its own pace.',
  tag: 'webhooks',
  responses: {
    200: { description: 'The endpoint with its new secret, this once', schema: 'webhook.json', example: { ...EXAMPLE, secret: 'whsec_Pq2vX7Zk9mR4tL1wS8nB3cD6fH0jK5yU' } },
    409: { description: 'A slack endpoint has no secret', schema: 'error.json' },
  },
  async handler(ctx) {
    const { params, team, deps } = ctx;
    const endpoint = await audited(ctx, async (sql) => {
      const before = await findEndpoint(sql, deps.secrets, team.teamId, params.id!, true);
      const rotated = await rotateSecret(sql, deps.secrets, team.teamId, params.id!);
      if (!before || !rotated) return { result: rotated };
      const when = (e: WebhookEndpoint) => ({ secretRotatedAt: toBody(e).secretRotatedAt });
      return { result: rotated, log: { action: 'webhook.rotate-secret', resourceType: 'webhook', resourceId: rotated.id, before: when(before), after: when(rotated) } };
    });
    if (endpoint === undefined) throw notFound(params.id!);
    if (endpoint === null) throw new ApiError('conflict', 'A slack endpoint has no secret to rotate');
    return { headers: NO_STORE, body: { ...toBody(endpoint), secret: endpoint.secret! } };
  },
});


const deliveryBody = (d: Delivery) => ({
  id: d.id,
  eventId: d.eventId,
  eventType: d.eventType,
  status: d.status,
  attempts: d.attempts,
  lastStatusCode: d.lastStatusCode,
  lastLatencyMs: d.lastLatencyMs,
  lastError: d.lastError,
  responseBody: d.responseBody,
  lastAttemptAt: iso(d.lastAttemptAt),
  nextAttemptAt: iso(d.nextAttemptAt),
  createdAt: iso(d.createdAt)!,
  deliveredAt: iso(d.deliveredAt),
});

const EXAMPLE_DELIVERY = {
  id: 'dlv_7m2k9q4w8e1r5t3y6u0p',
  eventId: 'evt_3n8b2v6c1x9z4l7k5j0h',
  eventType: 'alert.opened',
  status: 'pending',
  attempts: 1,
  lastStatusCode: 503,
  lastLatencyMs: 87,
  lastError: 'answered 503',
  responseBody: 'upstream unavailable',
  lastAttemptAt: '2026-11-23T10:00:05.000Z',
  nextAttemptAt: '2026-11-23T10:05:05.000Z',
  createdAt: '2026-11-23T10:00:00.000Z',
  deliveredAt: null,
};

export const listDeliveriesRoute = defineRoute<unknown, { limit?: number; cursor?: string; status?: DeliveryStatus }>({
  method: 'get',
  path: '/webhooks/:id/deliveries',
  operationId: 'listWebhookDeliveries',
  summary: "An endpoint's delivery log, newest first",
  description: 'Each event sent to the endpoint: attempts, the last status code, latency, error and answer, and when the next attempt is due.',
  tag: 'webhooks',
  scope: 'admin',
  query: 'webhook-deliveries-query.json',
  responses: { 200: { description: 'A page of deliveries', schema: 'webhook-delivery-page.json', example: { data: [EXAMPLE_DELIVERY], next_cursor: null } } },
  async handler({ params, query, team, deps }) {
    if (!(await findEndpoint(deps.db, deps.secrets, team.teamId, params.id!))) throw notFound(params.id!);
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isSeqPosition);
    const { rows, next_cursor } = await keysetPage(
      query.limit ?? 50,
      (n) => listDeliveries(deps.db, team.teamId, params.id!, { limit: n, beforeSeq: after?.seq, status: query.status }),
      (last) => ({ seq: last.seq }),
    );
    return { body: { data: rows.map(deliveryBody), next_cursor } };
  },
});

/** Sends a delivery now and answers with what it came to. */
/** What the routes that send a delivery now take beyond every route's deps: the dispatcher. */
export interface WebhookRouteDeps extends RouteDeps {
  webhooks: Dispatcher;
}

async function attemptAndAnswer(ctx: AuthedContext<unknown, unknown, WebhookRouteDeps>, endpointId: string, deliveryId: string) {
  const { deps, team } = ctx;
  const outcome = await deps.webhooks.attemptNow(deliveryId);
  // None when the delivery went meanwhile (its endpoint was deleted).
  if (!outcome) throw notFound(endpointId);
  const delivery = await findDelivery(deps.db, team.teamId, endpointId, deliveryId);
  if (!delivery) throw notFound(endpointId);
  return { body: { delivered: outcome.delivered, statusCode: outcome.statusCode, latencyMs: outcome.latencyMs, error: outcome.error, delivery: deliveryBody(delivery) } };
}

const EXAMPLE_ATTEMPT = { delivered: true, statusCode: 200, latencyMs: 42, error: null, delivery: { ...EXAMPLE_DELIVERY, eventType: 'test', status: 'delivered', lastStatusCode: 200, lastError: null, responseBody: null, nextAttemptAt: null, deliveredAt: '2026-11-23T10:00:05.000Z' } };

export const testWebhookRoute = defineRoute<unknown, unknown, WebhookRouteDeps>({
  method: 'post',
  path: '/webhooks/:id/test',
  operationId: 'testWebhook',
  summary: 'Send a test event to the endpoint now, and answer with its outcome',
  description: 'The event (type test) is sent whatever the endpoint subscribes to, and goes in the delivery log; a failed one is retried as any other.',
  tag: 'webhooks',
  responses: {
    200: { description: 'What the attempt came to', schema: 'webhook-attempt.json', example: EXAMPLE_ATTEMPT },
    409: { description: 'The endpoint is inactive or disabled', schema: 'error.json' },
  },
  async handler(ctx) {
    const { params, team, deps } = ctx;
    const endpoint = await findEndpoint(deps.db, deps.secrets, team.teamId, params.id!);
    if (!endpoint) throw notFound(params.id!);
    if (!endpoint.active || endpoint.disabledAt !== null) throw new ApiError('conflict', `Webhook ${endpoint.id} is ${endpoint.active ? 'disabled' : 'inactive'}: PATCH it with {"active": true} first`);
    const test = { message: 'A test event from spendscope', endpointId: endpoint.id };
    const [deliveryId] = await deps.db.transaction((sql) =>
      perform(
        sql,
        enqueueEvent(team.teamId, 'test', function* () {
          return test;
        }, Date.now(), endpoint.id),
      ),
    );
    return attemptAndAnswer(ctx, endpoint.id, deliveryId!);
  },
});

export const retryDeliveryRoute = defineRoute<unknown, unknown, WebhookRouteDeps>({
  method: 'post',
  path: '/webhooks/:id/deliveries/:delivery/retry',
  operationId: 'retryWebhookDelivery',
  summary: 'Send a failed delivery again now, and answer with its outcome',
  tag: 'webhooks',
  responses: {
    200: { description: 'What the attempt came to', schema: 'webhook-attempt.json', example: EXAMPLE_ATTEMPT },
    409: { description: 'The delivery is not failed (it was delivered, or it is still being retried)', schema: 'error.json' },
  },
  async handler(ctx) {
    const { params, team, deps } = ctx;
    const delivery = await findDelivery(deps.db, team.teamId, params.id!, params.delivery!);
    if (!delivery) throw new ApiError('not_found', `No delivery "${params.delivery}" of webhook "${params.id}" in this team`);
    if (delivery.status !== 'failed') throw new ApiError('conflict', `Delivery ${delivery.id} is ${delivery.status}: only a failed delivery is sent again`);
    return attemptAndAnswer(ctx, params.id!, delivery.id);
  },
});

export const webhookRoutes = [
  createWebhookRoute,
  listWebhooksRoute,
  getWebhookRoute,
  updateWebhookRoute,
  deleteWebhookRoute,
  rotateWebhookSecretRoute,
  listDeliveriesRoute,
  testWebhookRoute,
  retryDeliveryRoute,
];
