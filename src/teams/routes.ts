import { ApiError } from '../http/errors.js';
import { defineRoute, type RouteDeps } from '../http/routes.js';
import type { KeyOwner } from '../domain/keys.js';
import { audited } from '../audit-log/record.js';
import { issuedKeyBody, keyRoutes, NO_STORE } from './key-routes.js';
import { findTeam, lockTeam, rotateKey, setTeamCurrency } from './repository.js';
import { movePoliciesCurrency } from '../policies/repository.js';
import type { PolicyRouteDeps } from '../policies/revisions.js';
import { isCurrency } from '../domain/currencies.js';
import { teamUsage } from './usage.js';

/** The team of the request's key as GET /team shows it, with the key and this month's usage. */
async function teamBody(deps: RouteDeps, team: KeyOwner) {
  const found = await findTeam(deps.db, team.teamId);
  // The key was valid a moment ago; a team cannot be deleted, so this is a broken registry.
  if (!found) throw new Error(`team ${team.teamId} of an authenticated key is missing`);
  return {
    id: found.id,
    name: found.name,
    createdAt: new Date(found.createdAt).toISOString(),
    currency: found.currency,
    key: { id: team.keyId, name: team.keyName, scopes: team.scopes },
    usage: await teamUsage(deps, found.id),
  };
}

export const getTeam = defineRoute({
  method: 'get',
  path: '/team',
  operationId: 'getTeam',
  summary: 'The team of the API key, with this month\'s usage',
  description:
    'Also names the key of the request (`key`: its id, name and scopes), so a client such as the dashboard can offer ' +
    'only what the key may do.',
  tag: 'team',
  responses: {
    200: {
      description: 'Team info',
      schema: 'team.json',
      example: {
        id: 'team_b3k2m9q4x7c1v8n5z6a0',
        name: 'default',
        createdAt: '2026-11-01T09:30:00.000Z',
        currency: 'USD',
        key: { id: 'key_m2x8c4v1b7n3z9a5s6d0', name: 'grafana', scopes: ['read'] },
        usage: {
          period: { start: '2026-11-01T00:00:00.000Z', end: '2026-12-01T00:00:00.000Z' },
          events: 48213,
          spend: '152.250431',
          agents: 7,
          activePolicies: 2,
          openAlerts: 0,
          activeApiKeys: 1,
        },
      },
    },
  },
  async handler({ deps, team }) {
    return { body: await teamBody(deps, team) };
  },
});

export const patchTeam = defineRoute<{ currency?: string }, unknown, PolicyRouteDeps>({
  method: 'patch',
  path: '/team',
  operationId: 'patchTeam',
  summary: "Change the team's settings: its currency",
  description:
    '`currency` (ISO 4217) is what the team\'s records are valued in, from the change on: records stored before keep the value ' +
    'they were given. Policies counting in value count in the new currency from then on, their limits keeping their figures ' +
    '(a day\'s total starts again from the records valued in it). The change is in the audit log (resource `team`, with the ' +
    'policies moved).',
  tag: 'team',
  body: 'team-patch.json',
  bodyExample: { currency: 'EUR' },
  responses: {
    200: { description: 'The team as it now stands', schema: 'team.json' },
  },
  async handler(ctx) {
    const { body, team, deps } = ctx;
    if (body.currency !== undefined && !isCurrency(body.currency)) {
      throw new ApiError('validation_failed', `Request body is invalid: currency "${body.currency}" is not an ISO 4217 currency code`, [
        { field: 'currency', message: `"${body.currency}" is not an ISO 4217 currency code` },
      ]);
    }
    await audited(ctx, async (sql) => {
      // The team locked first: two changes at once each log what the other left.
      await lockTeam(sql, team.teamId);
      const before = await findTeam(sql, team.teamId);
      if (!before || body.currency === undefined || !(await setTeamCurrency(sql, team.teamId, body.currency))) return { result: undefined };
      const policies = await movePoliciesCurrency(sql, team.teamId, before.currency, body.currency, deps.policyRevisions);
      return {
        result: undefined,
        log: { action: 'team.update', resourceType: 'team', resourceId: team.teamId, before: { currency: before.currency }, after: { currency: body.currency, ...(policies.length > 0 ? { policies } : {}) } },
      };
    });
    return { body: await teamBody(deps, team) };
  },
});

export const rotateTeamKey = defineRoute({
  method: 'post',
  path: '/team/rotate-key',
  operationId: 'rotateTeamKey',
  summary: 'Issue a new API key and revoke the one used for this request',
  description:
    'The new key is in the response and nowhere else: store it now. It keeps the name, scopes, expiry and rate limits of the ' +
    'key that made this request, which is rejected from the next request on. No request body. Any key may rotate itself. ' +
    'A rotation is a request like any other (one token of the requests limit), and the new key goes on from the old ' +
    "key's rate-limit buckets: rotating never refills them.",
  tag: 'team',
  // A key may replace itself whatever its scopes: rotation is how a holder reacts to a leak.
  scope: 'any',
  responses: {
    200: {
      description: 'The new key, shown once',
      schema: 'api-key.json',
      example: {
        apiKey: 'ss_3q9V…',
        id: 'key_m2x8c4v1b7n3z9a5s6d0',
        name: 'default',
        prefix: 'ss_3q9VxR1',
        scopes: ['admin'],
        createdAt: '2026-11-21T10:00:00.000Z',
        expiresAt: null,
        rateLimit: { requestsPerSecond: 1000, recordsPerSecond: 100000 },
      },
    },
  },
  async handler(ctx) {
    const { deps, team } = ctx;
    // The rotated key is revoked and a new one takes its name, scopes and limits: recorded on the old key.
    const issued = await audited(ctx, async (sql) => {
      const key = await rotateKey(sql, team);
      if (!key) return { result: undefined };
      return { result: key, log: { action: 'key.rotate', resourceType: 'key', resourceId: team.keyId, before: { replacedBy: null }, after: { replacedBy: key.keyId } } };
    });
    if (!issued) throw new ApiError('unauthorized', 'This API key was rotated by another request');
    return {
      headers: NO_STORE,
      body: issuedKeyBody(issued, deps.config),
    };
  },
});

export const teamRoutes = [getTeam, patchTeam, rotateTeamKey, ...keyRoutes];
