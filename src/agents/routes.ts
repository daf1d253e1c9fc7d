import { decodeCursor, keysetPage } from '../http/cursor.js';
import { ApiError } from '../http/errors.js';
import { audited } from '../audit-log/record.js';
import { defineRoute, type RouteDeps } from '../http/routes.js';
import type { PolicyRouteDeps } from '../policies/revisions.js';
import { createAgent, deleteAgent, findAgent, listAgents, updateAgent, type AgentCursor, type AgentRecord, type AgentStatus } from './repository.js';
import { agentStats } from './stats.js';
import { setWallets, walletsOfAgents, type Wallet } from './wallets.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Agent summaries of some registry rows, with statistics from one ClickHouse query. */
async function summaries(deps: RouteDeps, teamId: string, agents: readonly AgentRecord[]) {
  const stats = await agentStats(await deps.readEvents(teamId), teamId, agents.map((a) => a.externalId));
  const wallets = await walletsOfAgents(deps.db, teamId, agents.map((a) => a.externalId));
  return agents.map((a) => ({
    agentId: a.externalId,
    name: a.name,
    totalSpend: stats.get(a.externalId)?.totalSpend ?? '0',
    transactionCount: stats.get(a.externalId)?.transactionCount ?? 0,
    lastActive: iso(a.lastEventAt),
    authorizedBy: a.authorizedBy,
    status: a.status,
    createdAt: iso(a.createdAt),
    wallets: wallets.get(a.externalId) ?? [],
  }));
}

/** What the audit log records of an agent: the fields a change can touch. */
const settings = (a: AgentRecord, wallets?: Wallet[]) => ({ name: a.name, authorizedBy: a.authorizedBy, status: a.status, ...(wallets ? { wallets } : {}) });

const EXAMPLE_AGENT = {
  agentId: 'research-bot',
  name: 'Research bot',
  totalSpend: '12.345678',
  transactionCount: 1289,
  lastActive: '2026-11-21T09:58:12.345Z',
  authorizedBy: 'alice@example.com',
  status: 'active',
  createdAt: '2026-11-02T08:00:00.000Z',
  wallets: [{ network: 'eip155:8453', address: '0x90f79bf6eb2c4f870365e785982e1f101e93b906' }],
};

export const createAgentRoute = defineRoute<{ external_id: string; name: string; authorized_by?: string }>({
  method: 'post',
  path: '/agents',
  operationId: 'createAgent',
  summary: 'Register an agent',
  description:
    'An agent already discovered from its events becomes a registered one: it takes this name and authoriser and ' +
    'keeps its statistics. An external_id the team already registered is a 409.',
  tag: 'agents',
  body: 'agent-create.json',
  bodyExample: { external_id: 'research-bot', name: 'Research bot', authorized_by: 'alice@example.com' },
  responses: {
    201: { description: 'The agent', schema: 'agent.json', example: EXAMPLE_AGENT },
    409: { description: 'The team already registered an agent with this external_id', schema: 'error.json' },
  },
  async handler(ctx) {
    const { body, team, deps } = ctx;
    const agent = await audited(ctx, async (sql) => {
      // An agent discovered from its events is registered by this: its fields before are those.
      const before = await findAgent(sql, team.teamId, body.external_id);
      const created = await createAgent(sql, team.teamId, { externalId: body.external_id, name: body.name, authorizedBy: body.authorized_by });
      if (!created) return { result: undefined };
      return { result: created, log: { action: 'agent.create', resourceType: 'agent', resourceId: created.externalId, before: before ? settings(before) : null, after: settings(created) } };
    });
    if (!agent) throw new ApiError('conflict', `An agent with external_id "${body.external_id}" already exists`, [{ field: 'external_id', message: 'already exists' }]);
    const [summary] = await summaries(deps, team.teamId, [agent]);
    return { status: 201, headers: { Location: `/api/v1/agents/${encodeURIComponent(agent.externalId)}` }, body: summary };
  },
});

export const getAgentRoute = defineRoute({
  method: 'get',
  path: '/agents/:id',
  operationId: 'getAgent',
  summary: 'One agent by its external id, with its spend statistics',
  tag: 'agents',
  responses: { 200: { description: 'The agent', schema: 'agent.json', example: EXAMPLE_AGENT } },
  async handler({ params, team, deps }) {
    const agent = await findAgent(deps.db, team.teamId, params.id!);
    if (!agent) throw new ApiError('not_found', `No agent "${params.id}" in this team`);
    const [summary] = await summaries(deps, team.teamId, [agent]);
    return { body: summary };
  },
});

const isAgentCursor = (v: unknown): v is AgentCursor =>
  typeof v === 'object' && v !== null &&
  (typeof (v as AgentCursor).lastEventAt === 'number' || (v as AgentCursor).lastEventAt === null) &&
  typeof (v as AgentCursor).externalId === 'string';

export const listAgentsRoute = defineRoute<unknown, { limit?: number; cursor?: string; q?: string }>({
  method: 'get',
  path: '/agents',
  operationId: 'listAgents',
  summary: 'Agents of the team, most recent activity first',
  description:
    'Registered and discovered agents in one list: latest event first, agents without events last, ties by id. ' +
    'Pass `next_cursor` as `cursor` for the next page; it is null on the last page. `q` keeps agents whose id or name ' +
    'starts with it (case-insensitive for ASCII). The order follows activity: an agent that spends while you page ' +
    'moves to the front.',
  tag: 'agents',
  query: 'agents-query.json',
  responses: {
    200: { description: 'A page of agents', schema: 'agent-page.json', example: { data: [EXAMPLE_AGENT], next_cursor: null } },
  },
  async handler({ query, team, deps }) {
    const limit = query.limit ?? 50;
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isAgentCursor);
    const { rows, next_cursor } = await keysetPage(
      limit,
      (n) => listAgents(deps.db, team.teamId, { limit: n, after, q: query.q }),
      (last) => ({ lastEventAt: last.lastEventAt, externalId: last.externalId }),
    );
    return { body: { data: await summaries(deps, team.teamId, rows), next_cursor } };
  },
});

export const patchAgentRoute = defineRoute<{ name?: string; authorized_by?: string | null; status?: AgentStatus; wallets?: Wallet[] }, unknown, PolicyRouteDeps>({
  method: 'patch',
  path: '/agents/:id',
  operationId: 'patchAgent',
  summary: 'Change an agent: name, authorized_by, status (active or suspended), wallets',
  description:
    'Fields left out keep their value. A suspended agent is stopped: its authorizations are declined (`reasons` says so) and its ' +
    'records, still stored and counted, raise a critical `suspended` alert, one per agent and UTC day. Every instance sees the ' +
    'change from its next request. `wallets` replaces the agent\'s wallets ([Reconciliation](reconciliation.md)): transfers of known ' +
    'tokens from them that no record claims are reported as unreported payments; a wallet another agent of the team holds is a 409.',
  tag: 'agents',
  body: 'agent-patch.json',
  bodyExample: { status: 'suspended' },
  responses: { 200: { description: 'The agent, changed', schema: 'agent.json', example: { ...EXAMPLE_AGENT, status: 'suspended' } } },
  async handler(ctx) {
    const { params, body, team, deps } = ctx;
    const wallets = body.wallets?.map((w) => ({ network: w.network, address: w.address.toLowerCase() }));
    const agent = await audited(ctx, async (sql) => {
      const before = await findAgent(sql, team.teamId, params.id!);
      const after = before && (await updateAgent(sql, team.teamId, params.id!, { name: body.name, authorizedBy: body.authorized_by, status: body.status }, deps.policyRevisions));
      if (!before || !after) return { result: undefined };
      let walletsBefore: Wallet[] | undefined;
      if (wallets) {
        walletsBefore = (await walletsOfAgents(sql, team.teamId, [after.externalId])).get(after.externalId) ?? [];
        const refused = await setWallets(sql, team.teamId, after.externalId, [...new Map(wallets.map((w) => [`${w.network} ${w.address}`, w])).values()], Date.now());
        if (refused) {
          const index = wallets.findIndex((w) => w.network === refused.taken.network && w.address === refused.taken.address);
          throw new ApiError('conflict', `Wallet ${refused.taken.address} on ${refused.taken.network} belongs to agent "${refused.taken.agentId}" of this team`, [
            { field: `wallets[${index}].address`, message: `belongs to agent "${refused.taken.agentId}"` },
          ]);
        }
      }
      return { result: after, log: { action: 'agent.update', resourceType: 'agent', resourceId: after.externalId, before: settings(before, walletsBefore), after: settings(after, wallets) } };
    });
    if (!agent) throw new ApiError('not_found', `No agent "${params.id}" in this team`);
    const [summary] = await summaries(deps, team.teamId, [agent]);
    return { body: summary };
  },
});

export const deleteAgentRoute = defineRoute<unknown, unknown, PolicyRouteDeps>({
  method: 'delete',
  path: '/agents/:id',
  operationId: 'deleteAgent',
  summary: "Remove an agent's registration (its events stay)",
  description: 'Its events, spend and alerts stay. An agent that sends events again is discovered again, as a new one is.',
  tag: 'agents',
  responses: { 204: { description: 'Removed' } },
  async handler(ctx) {
    const { params, team, deps } = ctx;
    const deleted = await audited(ctx, async (sql) => {
      const before = await findAgent(sql, team.teamId, params.id!);
      if (!before || !(await deleteAgent(sql, team.teamId, params.id!, deps.policyRevisions))) return { result: false };
      return { result: true, log: { action: 'agent.delete', resourceType: 'agent', resourceId: before.externalId, before: settings(before), after: null } };
    });
    if (!deleted) throw new ApiError('not_found', `No agent "${params.id}" in this team`);
    return { status: 204, body: undefined };
  },
});

export const agentRoutes = [createAgentRoute, listAgentsRoute, getAgentRoute, patchAgentRoute, deleteAgentRoute];
