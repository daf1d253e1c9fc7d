import { decodeCursor, keysetPage } from '../http/cursor.js';
import { ApiError } from '../http/errors.js';
import { audited } from '../audit-log/record.js';
import { defineRoute } from '../http/routes.js';
import { parseQueryTime } from '../http/validation.js';
import { alertBody as toBody } from './body.js';
import { AlertConflict, findAlert, listAlerts, setAlertStatus, type Alert, type AlertCursor, type AlertFilter, type AlertStatus } from './repository.js';

const iso = (ms: number) => new Date(ms).toISOString();

const EXAMPLE_ALERT = {
  id: 'alr_q4x7c1v8n5z6a0b2k3m9',
  type: 'violation',
  kind: 'daily',
  severity: 'warning',
  status: 'open',
  agentId: 'research-bot',
  policyId: 'pol_k3m9q4x7c1v8n5z6a0b2',
  window: { start: '2026-11-21T00:00:00.000Z', end: '2026-11-22T00:00:00.000Z' },
  observed: '104.25',
  limit: '100',
  subject: null,
  details: { policyName: 'research budget' },
  message:
    'Agent research-bot broke the daily limit of 100 of policy "research budget": spend of 104.25 in the window ' +
    '2026-11-21T00:00:00.000Z to 2026-11-22T00:00:00.000Z',
  sampleEventIds: ['9f2c4e1a7b3d5f60', '1a2b3c4d5e6f7081'],
  count: 2,
  firstSeen: '2026-11-21T15:02:11.000Z',
  lastSeen: '2026-11-21T15:07:45.120Z',
  createdAt: '2026-11-21T15:02:11.412Z',
  updatedAt: '2026-11-21T15:07:45.530Z',
  resolvedAt: null,
  resolution: null,
};

const notFound = (id: string) => new ApiError('not_found', `No alert "${id}" in this team`);

const isAlertCursor = (v: unknown): v is AlertCursor =>
  typeof v === 'object' && v !== null && typeof (v as AlertCursor).createdAt === 'number' && typeof (v as AlertCursor).id === 'string';

type AlertsQuery = Omit<AlertFilter, 'from' | 'to'> & { from?: string; to?: string; limit?: number; cursor?: string };

export const listAlertsRoute = defineRoute<unknown, AlertsQuery>({
  method: 'get',
  path: '/alerts',
  operationId: 'listAlerts',
  summary: 'Alerts of the team, newest first',
  description:
    'Filters: `status`, `type`, `severity`, `agent`, and `from`/`to` (Unix ms or ISO 8601: alerts seen in that range). ' +
    'Pass `next_cursor` as `cursor` for the next page; it is null on the last page.',
  tag: 'alerts',
  query: 'alerts-query.json',
  responses: { 200: { description: 'A page of alerts', schema: 'alert-page.json', example: { data: [EXAMPLE_ALERT], next_cursor: null } } },
  async handler({ query, team, deps }) {
    const filter: AlertFilter = {
      status: query.status,
      type: query.type,
      severity: query.severity,
      agent: query.agent,
      from: query.from === undefined ? undefined : parseQueryTime(query.from, 'from'),
      to: query.to === undefined ? undefined : parseQueryTime(query.to, 'to'),
    };
    const limit = query.limit ?? 50;
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isAlertCursor);
    const { rows, next_cursor } = await keysetPage(
      limit,
      (n) => listAlerts(deps.db, team.teamId, filter, { limit: n, after }),
      (last) => ({ createdAt: last.createdAt, id: last.id }),
    );
    return { body: { data: rows.map(toBody), next_cursor } };
  },
});

export const getAlertRoute = defineRoute({
  method: 'get',
  path: '/alerts/:id',
  operationId: 'getAlert',
  summary: 'One alert',
  tag: 'alerts',
  responses: { 200: { description: 'The alert', schema: 'alert.json', example: EXAMPLE_ALERT } },
  async handler({ params, team, deps }) {
    const alert = await findAlert(deps.db, team.teamId, params.id!);
    if (!alert) throw notFound(params.id!);
    return { body: toBody(alert) };
  },
});

export const updateAlertRoute = defineRoute<{ status?: AlertStatus; note?: string }>({
  method: 'patch',
  path: '/alerts/:id',
  operationId: 'updateAlert',
  summary: 'Resolve or reopen an alert',
  description:
    '`{"status": "resolved", "note"?}` resolves it (a new breach afterwards opens a new alert), and so does a PATCH with ' +
    'no body, `{}` or a `note` alone: resolving is what PATCH does unless it says otherwise. `{"status": "open"}` ' +
    'reopens it, unless the same breach has opened a newer alert meanwhile (409). Setting the status it has changes nothing.',
  tag: 'alerts',
  body: 'alert-patch.json',
  bodyWhenEmpty: {},
  bodyExample: { status: 'resolved', note: 'Budget raised for the launch week' },
  responses: {
    200: { description: 'The alert as changed', schema: 'alert.json', example: { ...EXAMPLE_ALERT, status: 'resolved', resolvedAt: '2026-11-21T16:00:00.000Z', resolution: 'Budget raised for the launch week' } },
    409: { description: 'Reopening: the same breach has a newer open alert', schema: 'error.json' },
  },
  async handler(ctx) {
    const { params, body, team, deps } = ctx;
    const status = body.status ?? 'resolved';
    if (status === 'open' && body.note !== undefined) {
      throw new ApiError('validation_failed', 'Request body is invalid: note is only allowed when resolving', [{ field: 'note', message: 'is only allowed with status resolved' }]);
    }
    try {
      const alert = await audited(ctx, async (sql) => {
        const before = await findAlert(sql, team.teamId, params.id!, true);
        const after = before && (await setAlertStatus(sql, team.teamId, params.id!, status, body.note));
        if (!before || !after) return { result: undefined };
        const state = (a: Alert) => ({ status: a.status, resolvedAt: a.resolvedAt === null ? null : iso(a.resolvedAt), resolution: a.resolution });
        const action = status === 'open' ? 'alert.reopen' : 'alert.resolve';
        return { result: after, log: { action, resourceType: 'alert', resourceId: after.id, before: state(before), after: state(after) } };
      });
      if (!alert) throw notFound(params.id!);
      return { body: toBody(alert) };
    } catch (err) {
      if (err instanceof AlertConflict) throw new ApiError('conflict', `Alert ${params.id} cannot be reopened: ${err.message}`);
      throw err;
    }
  },
});

export const alertRoutes = [listAlertsRoute, getAlertRoute, updateAlertRoute];
