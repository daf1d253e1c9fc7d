import { decodeCursor, keysetPage } from '../http/cursor.js';
import { ApiError } from '../http/errors.js';
import { audited } from '../audit-log/record.js';
import { defineRoute } from '../http/routes.js';
import { DEFAULT_CURRENCY, isCurrency } from '../domain/currencies.js';
import { findTeam } from '../teams/repository.js';
import type { PolicyRouteDeps } from './revisions.js';
import { checkPolicyFields, DEFAULT_APPROVAL_TIMEOUT_S, type CheckedPolicyFields, type Limit, type PolicyAllow, type PolicyMatch, type PolicyScope } from './limits.js';
import {
  createPolicy,
  deletePolicy,
  findPolicy,
  listPolicies,
  TooManyActivePolicies,
  updatePolicy,
  type Policy,
  type PolicyAction,
  type PolicyCursor,
  type PolicyInput,
} from './repository.js';

interface PolicyBody {
  name?: string;
  agents?: string[];
  limits?: Limit[];
  action?: PolicyAction;
  active?: boolean;
  timezone?: string | null;
  scope?: PolicyScope;
  match?: PolicyMatch | null;
  notify_at?: number[];
  starts_at?: string | null;
  approval_timeout_s?: number | null;
  allow?: PolicyAllow | null;
  currency?: string | null;
  on_unreported?: 'suspend' | null;
}

/**
 * The currency a policy counts in, as sent (checked), or for a new policy that names none: no
 * currency (amounts) when its filter keeps one asset, the team's otherwise. Values are only ever
 * in the team's currency (records are valued in it), so a policy counts in that one; null is for
 * one asset only: amounts of several assets are not added up any more.
 */
function policyCurrency(sent: string | null | undefined, match: PolicyMatch | null | undefined, teamCurrency: string): string | null {
  const oneAsset = match?.assets?.length === 1;
  if (sent === undefined) return oneAsset ? null : teamCurrency;
  if (sent !== null && !isCurrency(sent)) throw invalidCurrency(`"${sent}" is not an ISO 4217 currency code`);
  if (sent !== null && sent !== teamCurrency) throw invalidCurrency(`must be the team's currency, ${teamCurrency}: records are valued in it (PATCH /api/v1/team changes it)`);
  if (sent === null && !oneAsset) throw invalidCurrency(nullForOneAsset);
  return sent;
}

const nullForOneAsset = 'may be null only when match.assets names one asset: amounts of different assets are not added up';

const invalidCurrency = (message: string) => new ApiError('validation_failed', `Request body is invalid: currency ${message}`, [{ field: 'currency', message }]);

/** The body's new fields in stored form, only those given (a PATCH changes only what it sends). */
function budgetFields(checked: CheckedPolicyFields, body: PolicyBody): Partial<PolicyInput> {
  return {
    ...(body.scope !== undefined ? { scope: body.scope } : {}),
    ...(checked.match !== undefined ? { match: checked.match } : {}),
    ...(checked.notifyAt !== undefined ? { notifyAt: checked.notifyAt } : {}),
    ...(checked.startsAt !== undefined ? { startsAt: checked.startsAt } : {}),
    ...(body.approval_timeout_s !== undefined ? { approvalTimeoutS: body.approval_timeout_s } : {}),
    ...(checked.allow !== undefined ? { allow: checked.allow } : {}),
    ...(body.on_unreported !== undefined ? { onUnreported: body.on_unreported } : {}),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();
const toBody = (p: Policy) => ({
  id: p.id,
  name: p.name,
  agents: p.agents,
  limits: p.limits,
  action: p.action,
  active: p.active,
  timezone: p.timezone,
  scope: p.scope,
  match: p.match,
  notify_at: p.notifyAt,
  starts_at: iso(p.startsAt),
  approval_timeout_s: p.approvalTimeoutS ?? DEFAULT_APPROVAL_TIMEOUT_S,
  allow: p.allow,
  currency: p.currency,
  on_unreported: p.onUnreported,
  createdAt: iso(p.createdAt),
  updatedAt: iso(p.updatedAt),
});

/** What the audit log records of a policy: the fields a change can touch (its body, less id and times). */
const settings = (p: Policy) => {
  const { id: _id, createdAt: _created, updatedAt: _updated, ...fields } = toBody(p);
  return fields;
};

const notFound = (id: string) => new ApiError('not_found', `No policy "${id}" in this team`);

/** A policy must check something: a limit, an allowlist, or payments nobody reported. */
function checkSomething(limits: readonly Limit[], allow: PolicyAllow | null | undefined, onUnreported: 'suspend' | null | undefined): void {
  if (limits.length > 0 || allow || onUnreported) return;
  throw new ApiError('validation_failed', 'Request body is invalid: limits must hold at least one limit when the policy has no allow list nor on_unreported', [
    { field: 'limits', message: 'must hold at least one limit when the policy has no allow list nor on_unreported' },
  ]);
}

/**
 * Past MAX_ACTIVE_POLICIES_PER_TEAM: a 409, as for the team's webhook endpoints. The request is
 * valid; the team's state refuses it until another policy is deactivated or deleted.
 */
async function withActiveBound<T>(change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (err) {
    if (!(err instanceof TooManyActivePolicies)) throw err;
    throw new ApiError(
      'conflict',
      `This team has ${err.max} active policies, the most allowed (MAX_ACTIVE_POLICIES_PER_TEAM): deactivate or delete one first, or send "active": false`,
      [{ field: 'active', message: `would make more than ${err.max} policies of the team active` }],
    );
  }
}

const EXAMPLE_BODY = {
  name: 'research budget',
  agents: ['agent-1', 'agent-2'],
  limits: [
    { kind: 'per_call', amount: '1.00' },
    { kind: 'per_hour', amount: '10' },
    { kind: 'daily', amount: '100' },
    { kind: 'per_endpoint', amount: '5', endpoint: 'api.example.com' },
  ],
  action: 'flag',
  active: true,
};
const EXAMPLE_POLICY = {
  id: 'pol_k3m9q4x7c1v8n5z6a0b2',
  ...EXAMPLE_BODY,
  timezone: null,
  scope: 'agent',
  match: null,
  notify_at: [],
  starts_at: '2026-11-21T10:00:00.000Z',
  approval_timeout_s: 900,
  allow: null,
  currency: 'USD',
  on_unreported: null,
  createdAt: '2026-11-21T10:00:00.000Z',
  updatedAt: '2026-11-21T10:00:00.000Z',
};

const POLICY_DOC =
  'Limits: per_call (one payment), per_hour (spend in the calendar hour, UTC), daily, weekly and monthly ' +
  '(spend in the calendar day, ISO week from Monday 00:00, or calendar month in `timezone`, default UTC), total (spend since `starts_at`, ' +
  'default the creation\'s minute), per_endpoint (spend per UTC day to endpoints matching a host, `*.host` or URL prefix); ' +
  'calls_per_minute, calls_per_hour and calls_per_day take `count` (calls) instead of `amount`. Amounts are decimal strings. ' +
  '`scope` agent (default): each agent its own totals; pool: the policy\'s agents share one. `match` ({categories, networks, assets, ' +
  'endpoints, tags}) keeps only matching records. `currency` (ISO 4217; default the team\'s, or null when `match.assets` names one asset): limits ' +
  'of money are values in it and totals sum the records\' values (see Rates); null: amounts of the asset as sent. `notify_at` (percentages 1-99) raises a ' +
  '`threshold` alert once per window, subject and percentage. `agents` empty or omitted: every agent of the team. `action`: flag ' +
  '(an alert, warning), block (an authorization is declined; a record raises a critical alert) or approve (an authorization waits for a person: ' +
  '`decision: pending`, its amount held, decided with POST /authorizations/{id}/approve or /deny, declined after `approval_timeout_s`, ' +
  'default 900, at most 86,400; a record raises a critical alert). `allow` ({payees, networks, assets, endpoints}) allows only what its ' +
  'lists hold (deny by default: an authorization that does not say its payee is outside a payee list): anything else breaks the policy with ' +
  'kind `not_allowed`, under its action. EVM addresses are compared without case. `limits` may be empty when `allow` is given. A team has at most MAX_ACTIVE_POLICIES_PER_TEAM (1,000 by default) active ' +
  'policies: creating or re-activating one more is a 409 naming `active`.';

export const createPolicyRoute = defineRoute<PolicyBody & { name: string; limits: Limit[] }, unknown, PolicyRouteDeps>({
  method: 'post',
  path: '/policies',
  operationId: 'createPolicy',
  summary: 'Create a budget policy',
  description: `${POLICY_DOC} action defaults to flag, active to true.`,
  tag: 'policies',
  body: 'policy-create.json',
  bodyExample: EXAMPLE_BODY,
  responses: {
    201: { description: 'The policy', schema: 'policy.json', example: EXAMPLE_POLICY },
    409: { description: 'Active, and the team has MAX_ACTIVE_POLICIES_PER_TEAM active policies already (`details` names `active`)', schema: 'error.json' },
  },
  async handler(ctx) {
    const { body, team, deps } = ctx;
    const checked = checkPolicyFields(body);
    checkSomething(checked.limits!, checked.allow, body.on_unreported);
    const input: PolicyInput = {
      name: body.name,
      agents: body.agents ?? [],
      limits: checked.limits!,
      action: body.action ?? 'flag',
      active: body.active ?? true,
      timezone: body.timezone ?? null,
      ...budgetFields(checked, body),
    };
    const policy = await withActiveBound(() =>
      audited(ctx, async (sql) => {
        const teamCurrency = (await findTeam(sql, team.teamId))?.currency ?? DEFAULT_CURRENCY;
        input.currency = policyCurrency(body.currency, input.match, teamCurrency);
        const created = await createPolicy(sql, team.teamId, input, deps.policyRevisions, deps.config.evaluation.maxActivePoliciesPerTeam);
        return { result: created, log: { action: 'policy.create', resourceType: 'policy', resourceId: created.id, before: null, after: settings(created) } };
      }),
    );
    return { status: 201, headers: { Location: `/api/v1/policies/${policy.id}` }, body: toBody(policy) };
  },
});

export const getPolicyRoute = defineRoute({
  method: 'get',
  path: '/policies/:id',
  operationId: 'getPolicy',
  summary: 'One policy',
  tag: 'policies',
  responses: { 200: { description: 'The policy', schema: 'policy.json', example: EXAMPLE_POLICY } },
  async handler({ params, team, deps }) {
    const policy = await findPolicy(deps.db, team.teamId, params.id!);
    if (!policy) throw notFound(params.id!);
    return { body: toBody(policy) };
  },
});

export const updatePolicyRoute = defineRoute<PolicyBody, unknown, PolicyRouteDeps>({
  method: 'patch',
  path: '/policies/:id',
  operationId: 'updatePolicy',
  summary: 'Change a policy',
  description: `${POLICY_DOC} Only the fields sent change; agents and limits are replaced whole; timezone null means UTC.`,
  tag: 'policies',
  body: 'policy-patch.json',
  bodyExample: { limits: [{ kind: 'daily', amount: '150' }], active: true },
  responses: {
    200: { description: 'The policy as changed', schema: 'policy.json', example: EXAMPLE_POLICY },
    409: { description: 'Re-activating it, and the team has MAX_ACTIVE_POLICIES_PER_TEAM active policies already (`details` names `active`)', schema: 'error.json' },
  },
  async handler(ctx) {
    const { params, body, team, deps } = ctx;
    const checked = checkPolicyFields(body);
    const { name, agents, action, active, timezone } = body;
    const changes: Partial<PolicyInput> = {
      ...(name !== undefined ? { name } : {}),
      ...(agents !== undefined ? { agents } : {}),
      ...(action !== undefined ? { action } : {}),
      ...(active !== undefined ? { active } : {}),
      ...(timezone !== undefined ? { timezone } : {}),
      ...(checked.limits ? { limits: checked.limits } : {}),
      ...budgetFields(checked, body),
    };
    const policy = await withActiveBound(() =>
      audited(ctx, async (sql) => {
        const before = await findPolicy(sql, team.teamId, params.id!, true);
        if (before) checkSomething(changes.limits ?? before.limits, changes.allow !== undefined ? changes.allow : before.allow, changes.onUnreported !== undefined ? changes.onUnreported : before.onUnreported);
        if (before) {
          // A currency sent is checked against the filter it will have; one not sent stays, but a
          // change never makes a policy that adds amounts of several assets (one from before the
          // currencies keeps doing so while its filter and currency are left alone).
          const match = changes.match !== undefined ? changes.match : before.match;
          if (body.currency !== undefined) changes.currency = policyCurrency(body.currency, match, (await findTeam(sql, team.teamId))?.currency ?? DEFAULT_CURRENCY);
          else if (changes.match !== undefined && before.currency === null && match?.assets?.length !== 1) throw invalidCurrency(nullForOneAsset);
        }
        const after = before && (await updatePolicy(sql, team.teamId, params.id!, changes, deps.policyRevisions, deps.config.evaluation.maxActivePoliciesPerTeam));
        if (!before || !after) return { result: undefined };
        return { result: after, log: { action: 'policy.update', resourceType: 'policy', resourceId: after.id, before: settings(before), after: settings(after) } };
      }),
    );
    if (!policy) throw notFound(params.id!);
    return { body: toBody(policy) };
  },
});

export const deletePolicyRoute = defineRoute<unknown, unknown, PolicyRouteDeps>({
  method: 'delete',
  path: '/policies/:id',
  operationId: 'deletePolicy',
  summary: 'Delete a policy',
  description: 'It stops applying at once. Alerts it raised stay.',
  tag: 'policies',
  responses: { 204: { description: 'Deleted' } },
  async handler(ctx) {
    const { params, team, deps } = ctx;
    const deleted = await audited(ctx, async (sql) => {
      const before = await findPolicy(sql, team.teamId, params.id!, true);
      if (!before || !(await deletePolicy(sql, team.teamId, params.id!, deps.policyRevisions))) return { result: false };
      return { result: true, log: { action: 'policy.delete', resourceType: 'policy', resourceId: before.id, before: settings(before), after: null } };
    });
    if (!deleted) throw notFound(params.id!);
    return { status: 204, body: undefined };
  },
});

const isPolicyCursor = (v: unknown): v is PolicyCursor =>
  typeof v === 'object' && v !== null && typeof (v as PolicyCursor).createdAt === 'number' && typeof (v as PolicyCursor).id === 'string';

export const listPoliciesRoute = defineRoute<unknown, { limit?: number; cursor?: string; agent?: string; active?: boolean }>({
  method: 'get',
  path: '/policies',
  operationId: 'listPolicies',
  summary: 'Policies of the team, newest first',
  description:
    'Pass `next_cursor` as `cursor` for the next page; it is null on the last page. `agent` keeps the policies that ' +
    'apply to that agent (naming it, or applying to every agent); `active` keeps active or inactive ones.',
  tag: 'policies',
  query: 'policies-query.json',
  responses: {
    200: { description: 'A page of policies', schema: 'policy-page.json', example: { data: [EXAMPLE_POLICY], next_cursor: null } },
  },
  async handler({ query, team, deps }) {
    const limit = query.limit ?? 50;
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isPolicyCursor);
    const { rows, next_cursor } = await keysetPage(
      limit,
      (n) => listPolicies(deps.db, team.teamId, { limit: n, after, agent: query.agent, active: query.active }),
      (last) => ({ createdAt: last.createdAt, id: last.id }),
    );
    return { body: { data: rows.map(toBody), next_cursor } };
  },
});

export const policyRoutes = [createPolicyRoute, listPoliciesRoute, getPolicyRoute, updatePolicyRoute, deletePolicyRoute];
