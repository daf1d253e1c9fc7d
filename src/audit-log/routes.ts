import { decodeCursor, isSeqPosition, keysetPage } from '../http/cursor.js';
import { defineRoute } from '../http/routes.js';
import { listChanges } from './repository.js';

interface AuditLogQuery {
  limit?: number;
  cursor?: string;
  resource_type?: string;
  resource_id?: string;
  key_id?: string;
}

const EXAMPLE = {
  id: 'chg_Xq3v9RkLm2Tz8Wc1Pa0b',
  at: '2026-11-23T10:15:00.000Z',
  keyId: 'key_m2x8c4v1b7n3z9a5s6d0',
  keyName: 'alice',
  requestId: '0d6f8a52-5c3e-4f7e-9a43-2b1d7c9e8f10',
  method: 'PATCH',
  route: '/policies/:id',
  action: 'policy.update',
  resourceType: 'policy',
  resourceId: 'pol_7fk2m9q4w8e1r5t3y6u0',
  changes: { limits: { before: [{ kind: 'daily', amount: '100' }], after: [{ kind: 'daily', amount: '150' }] } },
};

export const listAuditLogRoute = defineRoute<unknown, AuditLogQuery>({
  method: 'get',
  path: '/audit-log',
  operationId: 'listAuditLog',
  summary: 'Changes made through the management API, newest first (admin)',
  description:
    'Every change to keys, agents, policies and alerts: the key that made it, the route, the resource, each changed ' +
    'field before and after, the request id. Recorded in the same transaction as the change; no route changes it. ' +
    'Filter by resource_type, resource_id, key_id; pass next_cursor as cursor for the next page.',
  tag: 'audit-log',
  scope: 'admin',
  query: 'audit-log-query.json',
  responses: { 200: { description: 'A page of changes', schema: 'audit-log-page.json', example: { data: [EXAMPLE], next_cursor: null } } },
  async handler({ query, team, deps }) {
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isSeqPosition);
    const limit = query.limit ?? 50;
    const fetched = await listChanges(deps.db, team.teamId, {
      limit: limit + 1,
      beforeSeq: after?.seq,
      resourceType: query.resource_type,
      resourceId: query.resource_id,
      keyId: query.key_id,
    });
    const { rows, next_cursor } = await keysetPage(limit, () => fetched, (last) => ({ seq: last.seq }));
    return { body: { data: rows.map(({ seq: _seq, at, ...change }) => ({ ...change, at: new Date(at).toISOString() })), next_cursor } };
  },
});

export const auditLogRoutes = [listAuditLogRoute];
