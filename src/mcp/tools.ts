/**
 * The MCP tools. Each is a route of the API called through its own handler, so it has that route's
 * validation, scope, rules and errors; this table only says how a tool's arguments map onto the
 * route's path parameters, query string or body, and which argument names an agent. A tool that
 * no HTTP route answers (get_settlement: one payment, looked up) has a route of its own in src/mcp.
 */
import type { Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { analyticsSummary } from '../analytics/routes.js';
import {
  captureAuthorizationRoute,
  createAuthorizationRoute,
  getAuthorizationRoute,
  voidAuthorizationRoute,
} from '../authorizations/routes.js';
import { listBudgetsRoute } from '../budgets/routes.js';
import type { AuthedRouteSpec, RouteSpec } from '../http/routes.js';
import type { SchemaRegistry } from '../http/validation.js';
import { ingestEvents } from '../ingest/routes.js';
import { getSettlementRoute } from './settlement-tool.js';

/** The schema of the arguments no route schema holds (path parameters, the long poll's wait). */
export const TOOL_ARGUMENTS_SCHEMA = 'mcp-arguments.json';

export interface ToolSpec {
  name: string;
  title: string;
  description: string;
  route: AuthedRouteSpec<any, any>;
  /**
   * Where the arguments go that TOOL_ARGUMENTS_SCHEMA does not define: the route's body, its query
   * string, one record of its batch (`batchField`), or nowhere (any such argument is refused).
   */
  rest: 'body' | 'query' | 'record' | 'none';
  /** For `rest: 'record'`: the schema of one record, which the route checks record by record. */
  recordSchema?: string;
  /** Arguments of TOOL_ARGUMENTS_SCHEMA that are path parameters: argument -> parameter. */
  params?: Record<string, string>;
  /** Arguments of TOOL_ARGUMENTS_SCHEMA passed in the route's query string: argument -> parameter. */
  queryParams?: Record<string, string>;
  /** The argument naming an agent: it must be one of the agents of the key's team. */
  agentArgument?: string;
  annotations: ToolAnnotations;
}

const authorizationId = { authorization_id: 'id' };
const reads: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };

const authed = (spec: RouteSpec): AuthedRouteSpec<any, any> => {
  if (spec.public || spec.operator) throw new Error(`${spec.operationId} is not a team route: a tool calls routes of a team key`);
  return spec;
};

export const TOOL_SPECS: readonly ToolSpec[] = [
  {
    name: 'get_budget_status',
    title: 'Budget status',
    description:
      "How much of each budget is used and where it is heading, as GET /api/v1/budgets answers: one row per active policy, limit " +
      "and subject in the current window, closest to its limit first, with spent, held, remaining (decimal strings, values in the " +
      "row's currency, the team's; currency null: amounts of the one asset the policy keeps) and a forecast. " +
      "Give agent_id for that agent's budgets (its own and the pools it belongs to). Needs the read scope.",
    route: authed(listBudgetsRoute),
    rest: 'query',
    agentArgument: 'agent_id',
    annotations: reads,
  },
  {
    name: 'authorize_payment',
    title: 'Authorize a payment',
    description:
      'Ask before paying: may agent_id pay amount (a decimal string) to endpoint now? Decided at once against the budgets; an ' +
      'approval holds the amount until capture_payment, void_authorization or expiry (expires_in_s, default 300). The answer has ' +
      'decision (approved, declined, or pending: a person decides, see wait_for_decision), status, reasons and the checks of each ' +
      "limit. Same as POST /api/v1/authorizations; the agent must be one of the team's agents. Needs the ingest scope.",
    route: authed(createAuthorizationRoute),
    rest: 'body',
    agentArgument: 'agent_id',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  {
    name: 'wait_for_decision',
    title: 'Wait for a decision',
    description:
      'The authorization authorization_id, once it is no longer pending (an approval policy waiting for a person), or as it ' +
      'stands after wait_s seconds (default 30, at most 60); one already decided is answered at once. Same as GET ' +
      '/api/v1/authorizations/{id}?wait=wait_s. A key revoked or expired while it waits gets an unauthorized error, not the ' +
      'decision. Needs the read scope.',
    route: authed(getAuthorizationRoute),
    rest: 'none',
    params: authorizationId,
    queryParams: { wait_s: 'wait' },
    annotations: reads,
  },
  {
    name: 'capture_payment',
    title: 'Capture a payment',
    description:
      'After paying: capture the held authorization authorization_id for amount (default: all of it, at most the held amount; ' +
      'the rest is released). Stores the payment as an audit record. Sent again with the same amount it answers the same. Same ' +
      'as POST /api/v1/authorizations/{id}/capture. Needs the ingest scope.',
    route: authed(captureAuthorizationRoute),
    rest: 'body',
    params: authorizationId,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  {
    name: 'void_authorization',
    title: 'Void an authorization',
    description:
      'Not paying after all: release the hold of the authorization authorization_id at once. Same as POST ' +
      '/api/v1/authorizations/{id}/void. Needs the ingest scope.',
    route: authed(voidAuthorizationRoute),
    rest: 'none',
    params: authorizationId,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  {
    name: 'record_payment',
    title: 'Record a payment',
    description:
      'Report one paid call as an audit record (agent_id, endpoint, method, amount as a decimal string, ...), as one record of ' +
      'POST /api/v1/events: counted against the budgets, raising alerts. Give it an id to make a retry store nothing twice, and ' +
      "authorization_id to capture an authorization with it. The agent must be one of the team's agents. Needs the ingest scope.",
    route: authed(ingestEvents),
    rest: 'record',
    recordSchema: 'audit-record.json',
    agentArgument: 'agent_id',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  {
    name: 'get_spend_summary',
    title: 'Spend summary',
    description:
      'The team\'s spend over a range (from inclusive, to exclusive: Unix ms or ISO 8601; default the last 30 days) in value ' +
      '(totalValue, in the team\'s currency; unvalued counts the records without one) and in asset amounts (totalSpend), with ' +
      'counts, by agent and by endpoint domain, and the previous period of equal length; agent keeps one agent\'s records. Same ' +
      'as GET /api/v1/analytics/summary. Needs the read scope.',
    route: authed(analyticsSummary),
    rest: 'query',
    agentArgument: 'agent',
    annotations: reads,
  },
  {
    name: 'get_settlement',
    title: 'Settlement on chain',
    description:
      'Whether a payment happened on chain as its record says: give record_id for that record\'s settlement, or tx_hash for ' +
      'every settlement of the transaction (records of the team naming it, and transfers in it from an agent\'s wallet that no ' +
      'record claims); one of them, not both. Each entry as GET /api/v1/settlements shows it: status (pending, verified, ' +
      'mismatch with the differing fields, failed, not_found, unverifiable, unreported), what the record reported and what the ' +
      'chain showed. None: data is empty and message says why (no such record, no transaction hash, not checked yet, no chain ' +
      'configured). Needs the read scope.',
    route: authed(getSettlementRoute),
    rest: 'query',
    annotations: reads,
  },
];

/** The arguments of a tool that TOOL_ARGUMENTS_SCHEMA defines. */
export const ownArguments = (tool: ToolSpec): string[] => [...Object.keys(tool.params ?? {}), ...Object.keys(tool.queryParams ?? {})];

/** The schema file holding the arguments a tool passes on to its route (body, query or record). */
export function restSchema(tool: ToolSpec): string | undefined {
  switch (tool.rest) {
    case 'body':
      return tool.route.body;
    case 'query':
      return tool.route.query;
    case 'record':
      return tool.recordSchema;
    case 'none':
      return undefined;
  }
}

type JsonSchema = Record<string, unknown>;

/** Keywords of the schema files that are theirs, not a tool's: identity, and this service's own annotations. */
const FILE_ONLY = new Set(['$schema', '$id', 'title', 'example', 'examples']);

/** A copy of a schema without FILE_ONLY keywords at its top and `x-` keywords anywhere (clients pass schemas on to models). */
function published(schema: unknown, top = true): unknown {
  if (Array.isArray(schema)) return schema.map((s) => published(s, false));
  if (schema === null || typeof schema !== 'object') return schema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key.startsWith('x-') || (top && FILE_ONLY.has(key))) continue;
    // Under `properties` the keys are field names, not keywords: every one is kept.
    out[key] = key === 'properties' ? Object.fromEntries(Object.entries(value as JsonSchema).map(([k, v]) => [k, published(v, false)])) : published(value, false);
  }
  return out;
}

/**
 * A tool's input schema, made from the route's own schema file (its properties, required fields,
 * `$defs` and whether unknown fields are refused) and the TOOL_ARGUMENTS_SCHEMA properties it
 * takes: the schemas that check a call are the ones it publishes.
 */
export function inputSchema(tool: ToolSpec, schemas: SchemaRegistry): Tool['inputSchema'] {
  const file = (id: string) => {
    const schema = schemas.schemas.get(id) as JsonSchema | undefined;
    if (!schema) throw new Error(`${tool.name}: no schema ${id} in schema/api`);
    return schema as { properties?: JsonSchema; required?: string[]; additionalProperties?: unknown; $defs?: JsonSchema };
  };
  const own = ownArguments(tool);
  const extra = file(TOOL_ARGUMENTS_SCHEMA);
  const restId = restSchema(tool);
  const rest = restId ? file(restId) : { properties: {}, required: [], additionalProperties: false };
  const properties: JsonSchema = {};
  for (const name of own) properties[name] = extra.properties![name];
  Object.assign(properties, rest.properties);
  const required = [...own.filter((n) => extra.required?.includes(n)), ...(rest.required ?? [])];
  return published({
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    ...(rest.additionalProperties === false ? { additionalProperties: false } : {}),
    ...(rest.$defs ? { $defs: rest.$defs } : {}),
  }) as Tool['inputSchema'];
}

/** What tools/list answers for a tool. */
export function toolListing(tool: ToolSpec, schemas: SchemaRegistry): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: inputSchema(tool, schemas),
    annotations: { title: tool.title, ...tool.annotations },
  };
}
