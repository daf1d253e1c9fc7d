import { decodeCursor, isSeqPosition, keysetPage } from '../http/cursor.js';
import { ApiError } from '../http/errors.js';
import { defineOperatorRoute, type PublicContext } from '../http/routes.js';
import { issuedKeyBody, NO_STORE } from '../teams/key-routes.js';
import { findTeam, normalTeamName, teamNameProblem, TeamNameTaken, type Team } from '../teams/repository.js';
import { calendarMonth } from '../teams/usage.js';
import { isTeamPosition, listOperatorActions, listTeams, provisionTeam, setTeamSuspended, shownTeam } from './repository.js';
import { usageOfTeams } from './usage.js';

const TEAM_EXAMPLE = {
  id: 'team_b3k2m9q4x7c1v8n5z6a0',
  name: 'acme',
  createdAt: '2026-11-01T09:30:00.000Z',
  suspended: false,
  suspendedAt: null,
};

const USAGE_EXAMPLE = {
  period: { start: '2026-12-01T00:00:00.000Z', end: '2027-01-01T00:00:00.000Z' },
  records: 48213,
  spendByAsset: [
    { asset: 'USDC', amount: '152.250431', records: 48001 },
    { asset: 'EURC', amount: '3.5', records: 212 },
  ],
  agents: 7,
  activeApiKeys: 3,
};

/** The UTC calendar month of `YYYY-MM`, or the current one. */
function monthOf(month: string | undefined): { start: Date; end: Date } {
  if (month === undefined) return calendarMonth(new Date());
  const [year, m] = month.split('-').map(Number) as [number, number];
  return calendarMonth(new Date(Date.UTC(year, m - 1, 1)));
}

const who = (ctx: PublicContext<unknown, unknown>) => ({ actor: 'operator_api' as const, requestId: ctx.requestId });

const notFound = (id: string) => new ApiError('not_found', `No team ${id}`);

const createTeamRoute = defineOperatorRoute<{ name: string }>({
  method: 'post',
  path: '/operator/teams',
  operationId: 'operatorCreateTeam',
  summary: 'Create a team and its first admin key (operator)',
  description:
    'For the service owner\'s back office, e.g. at a customer\'s sign-up. The key is in the answer and nowhere else: ' +
    'hand it over now. It works at once on every instance. Recorded in the operator audit log.',
  tag: 'operator',
  body: 'operator-team-create.json',
  bodyExample: { name: 'acme' },
  responses: {
    201: {
      description: 'The team and its first key, shown once',
      schema: 'operator-team-created.json',
      example: {
        team: TEAM_EXAMPLE,
        key: {
          apiKey: 'ss_3q9V…',
          id: 'key_m2x8c4v1b7n3z9a5s6d0',
          name: 'default',
          prefix: 'ss_3q9VxR1',
          scopes: ['admin'],
          createdAt: '2026-11-01T09:30:00.000Z',
          expiresAt: null,
          rateLimit: { requestsPerSecond: 1000, recordsPerSecond: 100000 },
        },
      },
    },
    409: { description: 'A team of this name exists (code conflict)', schema: 'error.json' },
  },
  async handler(ctx) {
    const name = normalTeamName(ctx.body.name);
    const problem = teamNameProblem(name);
    if (problem) throw new ApiError('validation_failed', `Request body is invalid: name ${problem}`, [{ field: 'name', message: problem }]);
    try {
      const { team, key } = await provisionTeam(ctx.deps.db, name, who(ctx));
      return { status: 201, headers: NO_STORE, body: { team: shownTeam(team), key: issuedKeyBody(key, ctx.deps.config) } };
    } catch (err) {
      if (err instanceof TeamNameTaken) throw new ApiError('conflict', `A team named "${name}" exists`, [{ field: 'name', message: 'is taken' }]);
      throw err;
    }
  },
});

interface TeamsQuery {
  limit?: number;
  cursor?: string;
  name?: string;
  suspended?: boolean;
  month?: string;
}

const listTeamsRoute = defineOperatorRoute<unknown, TeamsQuery>({
  method: 'get',
  path: '/operator/teams',
  operationId: 'operatorListTeams',
  summary: 'Every team of the installation, newest first, with its usage (operator)',
  description:
    'Each team with its standing and what it used in a UTC calendar month (this one unless `month` says which): records, ' +
    'spend per asset, agents and active keys. Never a record. Filter by `name` (exact) or `suspended`; pass next_cursor ' +
    'as cursor for the next page.',
  tag: 'operator',
  query: 'operator-teams-query.json',
  responses: { 200: { description: 'A page of teams', schema: 'operator-team-page.json', example: { data: [{ ...TEAM_EXAMPLE, usage: USAGE_EXAMPLE }], next_cursor: null } } },
  async handler({ query, deps }) {
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isTeamPosition);
    const { rows, next_cursor } = await keysetPage(
      query.limit ?? 50,
      (n) => listTeams(deps.db, { limit: n, after, name: query.name, suspended: query.suspended }),
      (last: Team) => ({ createdAt: last.createdAt, id: last.id }),
    );
    const usage = await usageOfTeams(deps, rows.map((t) => t.id), monthOf(query.month));
    return { body: { data: rows.map((t) => ({ ...shownTeam(t), usage: usage.get(t.id)! })), next_cursor } };
  },
});

const getTeamRoute = defineOperatorRoute<unknown, { month?: string }>({
  method: 'get',
  path: '/operator/teams/:id',
  operationId: 'operatorGetTeam',
  summary: 'One team, with its usage (operator)',
  tag: 'operator',
  query: 'operator-team-query.json',
  responses: { 200: { description: 'The team', schema: 'operator-team.json', example: { ...TEAM_EXAMPLE, usage: USAGE_EXAMPLE } } },
  async handler({ params, query, deps }) {
    const team = await findTeam(deps.db, params.id!);
    if (!team) throw notFound(params.id!);
    const usage = await usageOfTeams(deps, [team.id], monthOf(query.month));
    return { body: { ...shownTeam(team), usage: usage.get(team.id)! } };
  },
});

const patchTeamRoute = defineOperatorRoute<{ suspended: boolean }>({
  method: 'patch',
  path: '/operator/teams/:id',
  operationId: 'operatorUpdateTeam',
  summary: 'Suspend a team, or let it in again (operator)',
  description:
    'A suspended team\'s keys are answered 403 team_suspended on REST, MCP and BI from the next request, on every ' +
    'instance; a wait in progress (an authorization\'s ?wait=, an MCP wait) ends with that answer when it wakes. Its ' +
    'records, policies, keys and webhooks are kept. Setting the standing it already has changes nothing and records ' +
    'nothing. Recorded in the operator audit log.',
  tag: 'operator',
  body: 'operator-team-patch.json',
  bodyExample: { suspended: true },
  responses: { 200: { description: 'The team as it now stands', schema: 'operator-team.json', example: { ...TEAM_EXAMPLE, suspended: true, suspendedAt: '2026-12-02T10:00:00.000Z' } } },
  async handler(ctx) {
    const team = await ctx.deps.db.transaction((sql) => setTeamSuspended(sql, ctx.params.id!, ctx.body.suspended, who(ctx)));
    if (!team) throw notFound(ctx.params.id!);
    return { body: shownTeam(team) };
  },
});

const auditRoute = defineOperatorRoute<unknown, { limit?: number; cursor?: string; team_id?: string }>({
  method: 'get',
  path: '/operator/audit-log',
  operationId: 'operatorAuditLog',
  summary: "The operator's actions on teams, newest first (operator)",
  description:
    'Every team created (by this API or by npm run team:create), suspended or let in again: who (the API or the CLI), ' +
    'when, the request id, and each changed field before and after. Recorded in the transaction of the change; no route ' +
    'changes it. Filter by team_id; pass next_cursor as cursor for the next page.',
  tag: 'operator',
  query: 'operator-audit-query.json',
  responses: {
    200: {
      description: 'A page of actions',
      schema: 'operator-audit-page.json',
      example: {
        data: [
          {
            id: 'opa_Xq3v9RkLm2Tz8Wc1Pa0b',
            at: '2026-12-02T10:00:00.000Z',
            actor: 'operator_api',
            requestId: '0d6f8a52-5c3e-4f7e-9a43-2b1d7c9e8f10',
            action: 'team.suspend',
            teamId: 'team_b3k2m9q4x7c1v8n5z6a0',
            changes: { suspended: { before: false, after: true }, suspendedAt: { before: null, after: '2026-12-02T10:00:00.000Z' } },
          },
        ],
        next_cursor: null,
      },
    },
  },
  async handler({ query, deps }) {
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isSeqPosition);
    const { rows, next_cursor } = await keysetPage(
      query.limit ?? 50,
      (n) => listOperatorActions(deps.db, { limit: n, beforeSeq: after?.seq, teamId: query.team_id }),
      (last) => ({ seq: last.seq }),
    );
    return { body: { data: rows.map(({ seq: _seq, id, at, ...action }) => ({ id, at: new Date(at).toISOString(), ...action })), next_cursor } };
  },
});

export const operatorRoutes = [createTeamRoute, listTeamsRoute, getTeamRoute, patchTeamRoute, auditRoute];
