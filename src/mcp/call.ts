/**
 * One tool call: its slot, the key (again, if it queued), the key's scope, the arguments checked
 * by the route's own schemas, the agent checked against the team's, then the route's handler; its
 * answer, or its error as a tool error.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { findAgent } from '../agents/repository.js';
import { assertKeyStillWorks, assertScope } from '../http/auth.js';
import { shapeProblem } from '../http/body-shape.js';
import { ApiError, errorBody, knownError, type FieldError } from '../http/errors.js';
import { assertDeclaredResponse, scopeOf, type AuthedContext, type MountOptions } from '../http/routes.js';
import type { McpDeps } from './deps.js';

export type { McpDeps };
import type { KeyOwner } from '../domain/keys.js';
import type { Admission } from './admission.js';
import type { CallSlots } from './call-slots.js';
import { ownArguments, TOOL_ARGUMENTS_SCHEMA, type ToolSpec } from './tools.js';

/** What every call of one MCP request shares: the key's team, the request it came in, and its slots. */
export interface CallContext {
  team: KeyOwner;
  deps: McpDeps;
  log: Logger;
  requestId: string;
  options: MountOptions;
  slots: CallSlots;
}

const invalid = (problems: FieldError[]) => {
  const first = problems[0]!;
  return new ApiError('validation_failed', `Arguments are invalid: ${first.field} ${first.message}`, problems);
};

/**
 * Runs an admitted tool in a slot of its request: its route's answer as structured content, or a
 * tool error (never a stack trace). A call refused by the rate limits is answered at once. Its
 * tokens are given back when it is refused for the service's own reason (a 503) or never runs.
 */
export async function callTool(tool: ToolSpec, args: Record<string, unknown>, ctx: CallContext, admission: Admission, signal: AbortSignal): Promise<CallToolResult> {
  if (!admission.admitted) return toolError(tool, admission.refusal, ctx);
  return ctx.slots.run(async (queued) => {
    // Cancelled, or its client gone, while it queued: nobody reads an answer.
    if (signal.aborted) {
      admission.refund();
      return { isError: true, content: [] };
    }
    try {
      // A key revoked while the call queued runs nothing more for it.
      if (queued) await assertKeyStillWorks(ctx.deps.keys, ctx.team);
      const body = await runRoute(tool, args, ctx);
      return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body as Record<string, unknown> };
    } catch (err) {
      if (knownError(err)?.status === 503) admission.refund();
      return toolError(tool, err, ctx);
    }
  });
}

/** A tool's arguments as its route takes them, each part checked by the schema the route checks it with. */
function routeInput(tool: ToolSpec, args: Record<string, unknown>, deps: McpDeps): { params: Record<string, string>; query: Record<string, unknown>; body: unknown } {
  const route = tool.route;
  // A record's reserved keys and NUL characters are the route's per-record check, as over HTTP.
  const problem = tool.rest === 'record' ? undefined : shapeProblem(args);
  if (problem) throw invalid([problem]);
  const own = ownArguments(tool);
  const ownArgs: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) (own.includes(name) ? ownArgs : rest)[name] = value;
  const checked = own.length > 0 ? deps.schemas.body<Record<string, unknown>>(TOOL_ARGUMENTS_SCHEMA, ownArgs) : {};
  const params = Object.fromEntries(Object.entries(tool.params ?? {}).map(([arg, param]) => [param, String(checked[arg])]));
  let query: Record<string, unknown> = Object.fromEntries(Object.entries(tool.queryParams ?? {}).map(([arg, param]) => [param, checked[arg]]));
  let body: unknown;
  switch (tool.rest) {
    case 'body':
      body = deps.schemas.body(route.body!, rest);
      break;
    case 'query':
      Object.assign(query, rest);
      break;
    case 'record':
      body = deps.schemas.body(route.body!, { [route.batchField!]: [rest] });
      break;
    case 'none': {
      const unknown = Object.keys(rest);
      if (unknown.length > 0) throw invalid(unknown.map((field) => ({ field, message: 'is not a known field' })));
    }
  }
  // A route without a query schema is given what the tool maps to it as is (it reads none of it yet).
  if (route.query) query = deps.schemas.query(route.query, query);
  return { params, query, body };
}

async function runRoute(tool: ToolSpec, args: Record<string, unknown>, ctx: CallContext): Promise<unknown> {
  const { team, deps } = ctx;
  const route = tool.route;
  assertScope(team, scopeOf(route)!);
  const { params, query, body } = routeInput(tool, args, deps);
  const agent = tool.agentArgument === undefined ? undefined : args[tool.agentArgument];
  if (typeof agent === 'string') await assertTeamAgent(team, deps, agent, tool.agentArgument!);
  const context: AuthedContext<unknown, unknown> = {
    body,
    query,
    params,
    deps,
    requestId: ctx.requestId,
    log: ctx.log,
    method: route.method.toUpperCase(),
    route: route.path,
    team,
  };
  const result = await route.handler(context);
  if (ctx.options.validateResponses) assertDeclaredResponse(route, result.status ?? 200, result.body, deps.schemas);
  return result.body;
}

/**
 * An agent acts only for the agents its key's team has (registered, or seen in its records): over
 * MCP, a model cannot make up an agent id, which a new per-agent budget would not yet cover.
 */
async function assertTeamAgent(team: KeyOwner, deps: McpDeps, agentId: string, field: string): Promise<void> {
  if (await findAgent(deps.db, team.teamId, agentId)) return;
  throw new ApiError('not_found', `${field} "${agentId}" is not an agent of this team: an admin registers it (POST /api/v1/agents) first`, [
    { field, message: 'is not an agent of this team' },
  ]);
}

/**
 * Field problems of a validation error (a route's, or a batch's by record index: the one record
 * of record_payment, whose fields are named as its own), or undefined for other details.
 */
function fieldErrors(details: unknown): FieldError[] | undefined {
  if (!Array.isArray(details) || details.length === 0) return undefined;
  const isField = (d: unknown) => d !== null && typeof d === 'object' && typeof (d as FieldError).field === 'string' && typeof (d as FieldError).message === 'string';
  return details.every(isField) ? (details as FieldError[]).map((d) => ({ field: d.field, message: d.message })) : undefined;
}

/**
 * An error as a tool error: the API's error shape (code, message naming the field, details,
 * request id) as structured content and as text. Refusals are told as they are; a store not
 * answering is a store_unavailable to retry; anything else is logged and told only as internal.
 */
function toolError(tool: ToolSpec, err: unknown, ctx: CallContext): CallToolResult {
  const known = knownError(err);
  let error: ReturnType<typeof errorBody>;
  if (known) {
    const fields = known.code === 'validation_failed' ? fieldErrors(known.details) : undefined;
    error = fields ? errorBody('validation_failed', invalid(fields).message, ctx.requestId, fields) : errorBody(known.code, known.message, ctx.requestId, known.details);
    if (known.status >= 500) ctx.log.error({ err, tool: tool.name }, 'mcp: tool call failed');
    else ctx.log.info({ tool: tool.name, code: known.code }, 'mcp: tool call refused');
  } else {
    ctx.log.error({ err, tool: tool.name }, 'mcp: tool call failed');
    error = errorBody('internal_error', 'Internal error; quote the request id when reporting it', ctx.requestId);
  }
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(error) }], structuredContent: error };
}
