/**
 * The Model Context Protocol at /mcp: Streamable HTTP, stateless (a server and a transport per
 * request, no session to keep or share between instances), behind the API's own key check and
 * rate limits. The tools are routes of the API (tools.ts), called as call.ts says.
 */
import fs from 'node:fs';
import path from 'node:path';
import express, { type Express, type Request, type Response } from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { authenticate } from '../http/auth.js';
import { scanBodyShape } from '../http/body-shape.js';
import { allowedMethods, methodNotAllowed } from '../http/errors.js';
import type { MountOptions } from '../http/routes.js';
import type { McpDeps } from './deps.js';
import { precheckRequests } from '../limits/http.js';
import { PROJECT_ROOT } from '../paths.js';
import type { KeyOwner } from '../domain/keys.js';
import { admissionsOf, limitToolCalls, type CallAdmissions } from './admission.js';
import { callTool, type CallContext } from './call.js';
import { CallSlots } from './call-slots.js';
import { TOOL_SPECS, toolListing, type ToolSpec } from './tools.js';

export const MCP_PATH = '/mcp';

const VERSION = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

const INSTRUCTIONS =
  'spendscope keeps the budgets of this team\'s agents. Before paying for a call, ask authorize_payment; if it is approved, ' +
  'pay, then capture_payment with what was paid (or void_authorization if you did not pay); if it is pending, a person ' +
  'decides: wait_for_decision. A payment made without asking is reported with record_payment. get_budget_status tells ' +
  'what is left; get_settlement whether a payment with a transaction hash was seen on chain as recorded. Amounts are ' +
  'decimal strings ("0.25"), never numbers.';

/**
 * The MCP server of one request. The low-level Server, not McpServer: McpServer takes zod shapes,
 * while each tool's input schema here is the JSON Schema its route validates with (one schema, no copy).
 */
function mcpServer(byName: ReadonlyMap<string, ToolSpec>, listing: readonly Tool[], ctx: CallContext, admissions: CallAdmissions): Server {
  const server = new Server({ name: 'spendscope', version: VERSION }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...listing] }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const admission = admissions.next(extra.requestId);
    const tool = byName.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${request.params.name}"; tools/list names them`);
    // Every call of the body was counted before the transport read it; one it did not count is not run.
    if (!admission) throw new McpError(ErrorCode.InternalError, 'This call was not counted against the rate limits');
    return callTool(tool, request.params.arguments ?? {}, ctx, admission, extra.signal);
  });
  return server;
}

/**
 * POST /mcp with a key (401 without, in the API's error shape). Each tool call costs what its route
 * costs over HTTP, all counted before any runs (admission.ts), and a request runs its calls a few
 * at a time (call-slots.ts); a request without calls costs one request token. GET, which would
 * open a stream for messages the server starts, and DELETE, which would end a session, are 405: a
 * stateless server has neither. A router of its own, as /clickhouse: a protocol with its own
 * description (tools/list), not an operation of the OpenAPI document.
 */
export function mountMcp(app: Express, deps: McpDeps, options: MountOptions = {}): void {
  const tools = TOOL_SPECS;
  const listing = tools.map((t) => toolListing(t, deps.schemas));
  const json = express.json({ limit: deps.config.maxBodyBytes, verify: scanBodyShape });
  const router = express.Router();
  const route = router.route('/');
  const byName = new Map(tools.map((t) => [t.name, t]));
  const sendsRecord = (name: unknown) => typeof name === 'string' && byName.get(name)?.route.batchField !== undefined;
  const limits = [precheckRequests(deps.rateLimiter, deps.metrics), json, limitToolCalls(deps, sendsRecord)];
  route.post(authenticate(deps.keys), ...limits, async (req: Request, res: Response) => {
    const ctx: CallContext = { team: res.locals.team as KeyOwner, deps, log: req.log, requestId: String(req.id), options, slots: new CallSlots() };
    const server = mcpServer(byName, listing, ctx, admissionsOf(res));
    // Answers as an event stream, whose keep-alive comments keep a long wait_for_decision from
    // looking idle to HTTP_IDLE_TIMEOUT_MS or a proxy. A body express.json did not parse (another
    // Content-Type) is the transport's to refuse.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, maxRequestBodySize: deps.config.maxBodyBytes });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  route.options(allowedMethods(['post']));
  route.all(methodNotAllowed(['post']));
  app.use(MCP_PATH, router);
}
