import { audited } from '../audit-log/record.js';
import { ApiError } from '../http/errors.js';
import { defineRoute } from '../http/routes.js';
import type { Config } from '../config.js';
import type { KeyRates } from '../limits/rate-limiter.js';
import { issueKey, listKeys, revokeKey, type IssuedKey, type KeyInfo, type Scope } from './repository.js';

/** Responses that carry a key must never be stored by a proxy or a browser. */
export const NO_STORE = { 'Cache-Control': 'no-store' };

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** What the audit log records of a key: its metadata, never the secret. */
export const keySettings = (k: { name: string; scopes: Scope[]; expiresAt: number | null; rates: KeyRates }) => ({
  name: k.name,
  scopes: k.scopes,
  expiresAt: iso(k.expiresAt),
  rateLimit: { requests_per_second: k.rates.requestsPerSecond, records_per_second: k.rates.recordsPerSecond },
});

/** The rates a key is held to now: its own, else the service's defaults; null: not limited. */
export const rateLimitBody = (rates: KeyRates, config: Config) => {
  const effective = (own: number | null, fallback: number) => own ?? (fallback > 0 ? fallback : null);
  return {
    requestsPerSecond: effective(rates.requestsPerSecond, config.rateLimits.requestsPerSecond),
    recordsPerSecond: effective(rates.recordsPerSecond, config.rateLimits.recordsPerSecond),
  };
};

/** An issued key as answered once: the secret and its metadata. */
export const issuedKeyBody = (k: IssuedKey, config: Config) => ({
  apiKey: k.apiKey,
  id: k.keyId,
  name: k.name,
  prefix: k.prefix,
  scopes: k.scopes,
  createdAt: new Date(k.createdAt).toISOString(),
  expiresAt: iso(k.expiresAt),
  rateLimit: rateLimitBody(k.rates, config),
});

const keyInfoBody = (k: KeyInfo, config: Config) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  scopes: k.scopes,
  createdAt: new Date(k.createdAt).toISOString(),
  lastUsedAt: iso(k.lastUsedAt),
  expiresAt: iso(k.expiresAt),
  rateLimit: rateLimitBody(k.rates, config),
});

const EXAMPLE_KEY = {
  id: 'key_m2x8c4v1b7n3z9a5s6d0',
  name: 'research-agent',
  prefix: 'ss_3q9VxR1',
  scopes: ['ingest', 'read'],
  createdAt: '2026-11-23T10:00:00.000Z',
  lastUsedAt: '2026-11-23T10:41:00.000Z',
  expiresAt: null,
  rateLimit: { requestsPerSecond: 1000, recordsPerSecond: 2000 },
};

interface KeyCreate {
  name: string;
  scopes: Scope[];
  expires_at?: string;
  rate_limit?: { requests_per_second?: number; records_per_second?: number };
}

export const createKeyRoute = defineRoute<KeyCreate>({
  method: 'post',
  path: '/keys',
  operationId: 'createKey',
  summary: 'Issue a named API key with scopes (the key is shown once)',
  description:
    'ingest: send records. read: every GET and the SDK\'s queries. admin: everything. Give an agent ingest and read, ' +
    'a dashboard or BI job read, and keep admin for people. The key is in this answer and nowhere else.',
  tag: 'keys',
  body: 'key-create.json',
  bodyExample: { name: 'research-agent', scopes: ['ingest', 'read'], rate_limit: { records_per_second: 2000 } },
  responses: {
    201: { description: 'The key, shown once, with its metadata', schema: 'api-key.json', example: { apiKey: 'ss_3q9V…', ...EXAMPLE_KEY, lastUsedAt: undefined } },
  },
  async handler(ctx) {
    const { body, team, deps } = ctx;
    let expiresAt: number | null = null;
    if (body.expires_at !== undefined) {
      expiresAt = Date.parse(body.expires_at);
      if (!(expiresAt > Date.now())) {
        throw new ApiError('validation_failed', 'Request body is invalid: expires_at must be in the future', [{ field: 'expires_at', message: 'must be in the future' }]);
      }
    }
    const rates: KeyRates = {
      requestsPerSecond: body.rate_limit?.requests_per_second ?? null,
      recordsPerSecond: body.rate_limit?.records_per_second ?? null,
    };
    const issued = await audited(ctx, async (sql) => {
      const key = await issueKey(sql, team.teamId, { name: body.name, scopes: body.scopes, expiresAt, rates });
      return { result: key, log: { action: 'key.create', resourceType: 'key', resourceId: key.keyId, before: null, after: keySettings(key) } };
    });
    return { status: 201, headers: NO_STORE, body: issuedKeyBody(issued, deps.config) };
  },
});

export const listKeysRoute = defineRoute({
  method: 'get',
  path: '/keys',
  operationId: 'listKeys',
  summary: "The team's keys that still work, newest first (metadata only)",
  tag: 'keys',
  responses: { 200: { description: 'The keys', schema: 'key-list.json', example: { data: [EXAMPLE_KEY] } } },
  async handler({ team, deps }) {
    return { body: { data: (await listKeys(deps.db, team.teamId)).map((k) => keyInfoBody(k, deps.config)) } };
  },
});

export const revokeKeyRoute = defineRoute({
  method: 'delete',
  path: '/keys/:id',
  operationId: 'revokeKey',
  summary: 'Revoke a key at once',
  description: "Refused (409) for the team's last admin key: without one, nobody could manage keys again.",
  tag: 'keys',
  responses: {
    204: { description: 'Revoked: refused from the next request on' },
    409: { description: "The team's last admin key", schema: 'error.json' },
  },
  async handler(ctx) {
    const { params, team, deps } = ctx;
    const outcome = await audited(ctx, async (sql) => {
      const before = (await listKeys(sql, team.teamId)).find((k) => k.id === params.id);
      const result = await revokeKey(sql, team.teamId, params.id!);
      if (result !== 'revoked' || !before) return { result };
      return { result, log: { action: 'key.revoke', resourceType: 'key', resourceId: before.id, before: keySettings(before), after: null } };
    });
    if (outcome === 'not_found') throw new ApiError('not_found', `No key "${params.id}" in this team`);
    if (outcome === 'last_admin') {
      throw new ApiError('conflict', "This is the team's last admin key: create another admin key before revoking it", [{ field: 'id', message: 'is the last admin key' }]);
    }
    return { status: 204, body: undefined };
  },
});

export const keyRoutes = [createKeyRoute, listKeysRoute, revokeKeyRoute];
