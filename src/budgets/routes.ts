import { defineRoute } from '../http/routes.js';
import { budgetStatus, MAX_BUDGET_ROWS } from './status.js';

const EXAMPLE_ROW = {
  policy_id: 'pol_oc5z2hitduo6lmewdoyy6csy',
  policy_name: 'research agents',
  action: 'block',
  kind: 'monthly',
  currency: 'USD',
  scope: 'pool',
  agent_id: null,
  endpoint: null,
  window: { start: '2026-11-01T00:00:00.000Z', end: '2026-12-01T00:00:00.000Z' },
  limit: '1000',
  spent: '612.5',
  held: '2.25',
  remaining: '385.25',
  used: 0.61475,
  notify_at: [80],
  forecast: { spent_at_end: '799.1304347826086956', exhausted_at: null },
};

export const listBudgetsRoute = defineRoute<unknown, { policy_id?: string; agent_id?: string }>({
  method: 'get',
  path: '/budgets',
  operationId: 'listBudgets',
  summary: 'How much of each budget is used, and where it is heading',
  description:
    'One row per active policy, windowed limit and subject (each agent of a per-agent policy, or the pool) in the current window, ' +
    'closest to its limit first: `spent` (the sum of the window\'s records, read whole from the event store), `held` (open ' +
    'authorizations), `remaining`, `used` ((spent + held) / limit, null for a limit of 0), money as decimal strings and call counts ' +
    'as integer strings. per_call limits have no window and are not listed; a `total` has `window` null. The forecast is linear: ' +
    "the window's average rate so far carried on to its end (`spent_at_end`, null for a total), and `exhausted_at`, when that rate " +
    `on top of what is held reaches the limit (null when the window ends first). At most ${MAX_BUDGET_ROWS.toLocaleString('en-US')} rows (` +
    '`truncated` says so): filter by `policy_id` or `agent_id`.',
  tag: 'budgets',
  query: 'budgets-query.json',
  responses: { 200: { description: 'The budgets', schema: 'budget-list.json', example: { data: [EXAMPLE_ROW], truncated: false } } },
  async handler({ query, team, deps }) {
    const events = await deps.readEvents(team.teamId);
    const { rows, truncated } = await budgetStatus(deps.db, events, team.teamId, { policyId: query.policy_id, agentId: query.agent_id });
    return { body: { data: rows, truncated } };
  },
});

export const budgetRoutes = [listBudgetsRoute];
