/**
 * The MCP server at /mcp through the SDK's own client over real HTTP: every tool answers what the
 * HTTP API answers for the same thing, bad arguments and refusals are tool errors naming the field
 * or scope, and a key reaches only its own team's agents and authorizations.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { App } from '../../src/app.js';
import { api, appWith, errorOf, listenOnce, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { askAbove, keyWith, newPolicy, sleep, type Team } from '../helpers/common.js';
import { answer, call, connect, ENDPOINT, registerAgent, toolError } from './client.js';

const TOOLS = ['get_budget_status', 'authorize_payment', 'wait_for_decision', 'capture_payment', 'void_authorization', 'record_payment', 'get_spend_summary', 'get_settlement'];

/** A tool error of a bad argument: validation_failed, naming the field in the message and in details. */
function expectFieldError(result: CallToolResult, field: string): void {
  const error = toolError(result);
  expect(error.code).to.equal('validation_failed');
  expect(error.details!.map((d) => d.field)).to.include(field);
  expect(error.message).to.include(field);
}

const httpGet = async (team: Team, path: string) => (await api().get(path).set(...team.auth).expect(200)).body;

/** Budgets without the forecast, which moves with the clock between two reads. */
const withoutForecast = (budgets: { data: Record<string, unknown>[] }) => budgets.data.map(({ forecast: _f, ...row }) => row);

describeOnEachRegistry('MCP at /mcp', function () {
  this.timeout(60_000);
  let server: { url: string; close: () => Promise<void> };
  let team: Team;
  let client: Client;

  before(async () => {
    server = await listenOnce();
    team = await newTeam('mcp');
    await registerAgent(team, 'bot');
    client = await connect(server.url, team.apiKey);
  });
  after(async () => {
    await client?.close();
    await server?.close();
  });

  it('lists the eight tools, each with a JSON Schema of its input made from its route\'s schema', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).to.have.members(TOOLS);
    expect(tools).to.have.length(TOOLS.length);
    for (const tool of tools) {
      expect(tool.inputSchema.type, tool.name).to.equal('object');
      expect(tool.description, tool.name).to.match(/scope/);
      // The service's own annotations stay in its files: clients hand schemas on to models.
      expect(JSON.stringify(tool.inputSchema), tool.name).to.not.match(/x-message|\$id|\$schema/);
    }
    const byName = new Map(tools.map((t) => [t.name, t]));
    const authorize = byName.get('authorize_payment')!.inputSchema as Record<string, any>;
    const routeSchema = testEnv().schemas.schemas.get('authorization-create.json') as Record<string, any>;
    expect(authorize.required).to.deep.equal(routeSchema.required);
    expect(Object.keys(authorize.properties)).to.deep.equal(Object.keys(routeSchema.properties));
    expect(authorize.properties.amount.pattern).to.equal(routeSchema.properties.amount.pattern);
    expect(authorize.additionalProperties).to.equal(false);
    const wait = byName.get('wait_for_decision')!.inputSchema as Record<string, any>;
    expect(wait.required).to.deep.equal(['authorization_id']);
    expect(wait.properties.wait_s).to.include({ type: 'integer', minimum: 1, maximum: 60, default: 30 });
    const capture = byName.get('capture_payment')!.inputSchema as Record<string, any>;
    expect(Object.keys(capture.properties)).to.deep.equal(['authorization_id', 'amount', 'tx_hash', 'payer_address', 'network', 'settled_at', 'status_code', 'response_time_ms']);
    const record = byName.get('record_payment')!.inputSchema as Record<string, any>;
    expect(record.required).to.deep.equal(['agent_id', 'endpoint', 'method']);
    expect(record.properties.amount.$ref).to.equal('#/$defs/decimal');
    expect(record.$defs.decimal.pattern).to.be.a('string');
    expect(byName.get('get_budget_status')!.annotations).to.include({ readOnlyHint: true });
    expect(byName.get('authorize_payment')!.annotations).to.include({ readOnlyHint: false });
  });

  it('get_budget_status answers as GET /api/v1/budgets for the agent', async () => {
    const t = await newTeam('mcp-budgets');
    await registerAgent(t, 'bot');
    await newPolicy(t, { name: 'daily', agents: ['bot'], action: 'block', limits: [{ kind: 'daily', amount: '10' }] });
    await api().post('/api/v1/events').set(...t.auth).send({ events: [{ id: 'b-1', agent_id: 'bot', endpoint: ENDPOINT, method: 'GET', amount: '1.25', asset: 'USDC' }] }).expect(200);
    const c = await connect(server.url, t.apiKey);
    try {
      const viaMcp = answer<{ data: Record<string, unknown>[]; truncated: boolean }>(await call(c, 'get_budget_status', { agent_id: 'bot' }));
      const viaHttp = await httpGet(t, '/api/v1/budgets?agent_id=bot');
      expect(viaMcp.data).to.have.length(1);
      expect(viaMcp.data[0]).to.include({ agent_id: 'bot', limit: '10', spent: '1.25', remaining: '8.75' });
      expect(withoutForecast(viaMcp)).to.deep.equal(withoutForecast(viaHttp));
      expect(viaMcp.truncated).to.equal(viaHttp.truncated);
    } finally {
      await c.close();
    }
  });

  it('authorize_payment then capture_payment: the same authorization as the HTTP API, and the capture is spend', async () => {
    const from = String(Date.now() - 1000);
    const held = answer(await call(client, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '3', asset: 'USDC' }));
    expect(held).to.include({ decision: 'approved', status: 'held', amount: '3', agent_id: 'bot' });
    expect(held).to.deep.equal(await httpGet(team, `/api/v1/authorizations/${held.id}`));
    const captured = answer(await call(client, 'capture_payment', { authorization_id: held.id, amount: '2.5' }));
    expect(captured).to.include({ id: held.id, status: 'captured', captured_amount: '2.5', captured_by: `${held.id}.capture` });
    expect(captured).to.deep.equal(await httpGet(team, `/api/v1/authorizations/${held.id}`));
    // Sent again with the same amount: the same answer, nothing stored twice.
    expect(answer(await call(client, 'capture_payment', { authorization_id: held.id, amount: '2.50' }))).to.deep.equal(captured);
    const range = { from, to: String(Date.now() + 60_000) };
    const summary = answer(await call(client, 'get_spend_summary', { ...range, agent: 'bot' }));
    expect(summary).to.include({ totalSpend: '2.5', count: 1 });
    expect(summary).to.deep.equal(await httpGet(team, `/api/v1/analytics/summary?from=${range.from}&to=${range.to}&agent=bot`));
    // Not held any more: the route's 409, as a tool error carrying the authorization.
    const again = toolError(await call(client, 'void_authorization', { authorization_id: held.id }));
    expect(again.code).to.equal('conflict');
    expect((again.details as unknown as { status: string }).status).to.equal('captured');
  });

  it('authorize_payment then void_authorization releases the hold, as the HTTP API shows it', async () => {
    const held = answer(await call(client, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '1.5' }));
    expect(held.status).to.equal('held');
    const voided = answer(await call(client, 'void_authorization', { authorization_id: held.id }));
    expect(voided).to.include({ id: held.id, status: 'voided' });
    expect(voided.voided_at).to.be.a('string');
    expect(voided).to.deep.equal(await httpGet(team, `/api/v1/authorizations/${held.id}`));
  });

  it('wait_for_decision answers an authorization already decided at once, as GET /api/v1/authorizations/:id', async () => {
    const held = answer(await call(client, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '0.5' }));
    const started = Date.now();
    const waited = answer(await call(client, 'wait_for_decision', { authorization_id: held.id, wait_s: 30 }));
    expect(Date.now() - started).to.be.below(5_000);
    expect(waited).to.deep.equal(await httpGet(team, `/api/v1/authorizations/${held.id}`));
    expect(waited).to.include({ decision: 'approved', status: 'held' });
    const unknown = toolError(await call(client, 'wait_for_decision', { authorization_id: 'auth_nothing' }));
    expect(unknown.code).to.equal('not_found');
  });

  it('wait_for_decision answers a pending authorization as soon as a person approves it, and a pending one as it is after wait_s', async () => {
    const t = await newTeam('mcp-wait');
    await registerAgent(t, 'bot');
    await newPolicy(t, askAbove('5'));
    const c = await connect(server.url, t.apiKey);
    try {
      const pending = answer(await call(c, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '9' }));
      expect(pending).to.include({ decision: 'pending', status: 'pending' });
      const started = Date.now();
      const waiting = call(c, 'wait_for_decision', { authorization_id: pending.id, wait_s: 20 });
      await sleep(700);
      await api().post(`/api/v1/authorizations/${pending.id}/approve`).set(...t.auth).send({ note: 'ok' }).expect(200);
      const decided = answer(await waiting);
      const waited = Date.now() - started;
      expect(decided).to.include({ id: pending.id, decision: 'approved', status: 'held', decision_note: 'ok' });
      expect(waited).to.be.at.least(600).and.below(10_000);
      expect(decided).to.deep.equal(await httpGet(t, `/api/v1/authorizations/${pending.id}`));
      // Nobody decides: after wait_s, as it is.
      const other = answer(await call(c, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '8' }));
      const again = Date.now();
      expect(answer(await call(c, 'wait_for_decision', { authorization_id: other.id, wait_s: 1 }))).to.include({ id: other.id, status: 'pending' });
      expect(Date.now() - again).to.be.at.least(900).and.below(5_000);
    } finally {
      await c.close();
    }
  });

  it('wait_for_decision of a key revoked while it waits is an unauthorized tool error, not the decision made after', async () => {
    const t = await newTeam('mcp-wait-revoked');
    await registerAgent(t, 'bot');
    await newPolicy(t, askAbove('5'));
    const agentKey = await keyWith(t, { scopes: ['ingest', 'read'] });
    const c = await connect(server.url, agentKey.apiKey);
    try {
      const pending = answer(await call(c, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '9' }));
      expect(pending.status).to.equal('pending');
      const parked = testEnv().deps.decisionWaiters.size;
      const waiting = call(c, 'wait_for_decision', { authorization_id: pending.id, wait_s: 20 });
      for (let i = 0; testEnv().deps.decisionWaiters.size === parked && i < 200; i++) await sleep(25);
      expect(testEnv().deps.decisionWaiters.size, 'the call waits').to.equal(parked + 1);
      await api().delete(`/api/v1/keys/${agentKey.id}`).set(...t.auth).expect(204);
      expect((await api().post(`/api/v1/authorizations/${pending.id}/approve`).set(...t.auth).send({}).expect(200)).body.status).to.equal('held');
      const result = await waiting;
      expect(toolError(result)).to.include({ code: 'unauthorized', message: 'Invalid, revoked or expired API key' });
      expect(JSON.stringify(result)).to.not.include('held');
    } finally {
      await c.close();
    }
  });

  it('record_payment stores one record, which GET /api/v1/audit/:id and the summary then show; sent again it is stored once', async () => {
    const t = await newTeam('mcp-record');
    await registerAgent(t, 'bot');
    const c = await connect(server.url, t.apiKey);
    try {
      const record = { id: 'mcp-rec-1', agent_id: 'bot', endpoint: ENDPOINT, method: 'POST', amount: '0.750000', asset: 'USDC', network: 'eip155:8453' };
      expect(answer(await call(c, 'record_payment', record))).to.deep.equal({ ingested: 1, duplicates: 0, conflicts: 0, errors: [], warnings: [], alerts_created: 0 });
      expect(answer(await call(c, 'record_payment', record))).to.include({ ingested: 1, duplicates: 1 });
      const stored = await httpGet(t, '/api/v1/audit/mcp-rec-1');
      expect(stored).to.include({ id: 'mcp-rec-1', agent_id: 'bot', endpoint: ENDPOINT, asset: 'USDC' });
      expect(stored.amount).to.match(/^0\.75/);
      expect(await httpGet(t, '/api/v1/analytics/summary')).to.include({ totalSpend: '0.75', count: 1 });
    } finally {
      await c.close();
    }
  });

  it('a bad argument is a tool error naming the field, as the HTTP API names it', async () => {
    expectFieldError(await call(client, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '-1' }), 'amount');
    expectFieldError(await call(client, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: 1 }), 'amount');
    expectFieldError(await call(client, 'authorize_payment', { agent_id: 'bot', endpoint: 'ftp://x.example/', amount: '1' }), 'endpoint');
    expectFieldError(await call(client, 'authorize_payment', { agent_id: 'bot', amount: '1' }), 'endpoint');
    expectFieldError(await call(client, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '1', surprise: 1 }), 'surprise');
    expectFieldError(await call(client, 'authorize_payment', { agent_id: 'bot\u0000', endpoint: ENDPOINT, amount: '1' }), 'agent_id');
    expectFieldError(await call(client, 'void_authorization', {}), 'authorization_id');
    expectFieldError(await call(client, 'void_authorization', { authorization_id: 'auth_x', amount: '1' }), 'amount');
    expectFieldError(await call(client, 'wait_for_decision', { authorization_id: 'auth_x', wait_s: 61 }), 'wait_s');
    expectFieldError(await call(client, 'wait_for_decision', { authorization_id: 'auth_x', wait_s: '5' }), 'wait_s');
    expectFieldError(await call(client, 'get_spend_summary', { limit: 0 }), 'limit');
    expectFieldError(await call(client, 'get_spend_summary', { from: 'yesterday' }), 'from');
    expectFieldError(await call(client, 'get_spend_summary', { from: '2026-01-02', to: '2026-01-01' }), 'from');
    // A record's problems are named as its own fields, not as the batch the route wraps it in.
    const record = toolError(await call(client, 'record_payment', { agent_id: 'bot', endpoint: ENDPOINT, method: 'GET', amount: '0.1.2' }));
    expect(record.details).to.deep.equal([{ field: 'amount', message: 'must be a non-negative decimal string with at most 20 integer and 18 fractional digits, e.g. "0.001"' }]);
    expect(record.message).to.equal(`Arguments are invalid: amount ${record.details![0]!.message}`);
    // A capture over the held amount: the handler's own check, named as over HTTP.
    const held = answer(await call(client, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '1' }));
    const over = toolError(await call(client, 'capture_payment', { authorization_id: held.id, amount: '1.5' }));
    expect(over.details).to.deep.equal([{ field: 'amount', message: 'must be at most the held amount 1' }]);
  });

  it('a key without the scope a tool needs is refused, naming the scope; it still lists the tools', async () => {
    const reader = await connect(server.url, (await keyWith(team, { scopes: ['read'] })).apiKey);
    const ingester = await connect(server.url, (await keyWith(team, { scopes: ['ingest'] })).apiKey);
    try {
      expect((await reader.listTools()).tools).to.have.length(TOOLS.length);
      const refused = toolError(await call(reader, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '1' }));
      expect(refused.code).to.equal('forbidden');
      expect(refused.message).to.include('"ingest" scope');
      expect(refused.details).to.deep.equal([{ field: 'scope', message: '"ingest" is required' }]);
      expect(toolError(await call(reader, 'record_payment', { agent_id: 'bot', endpoint: ENDPOINT, method: 'GET' })).code).to.equal('forbidden');
      answer(await call(reader, 'get_budget_status', { agent_id: 'bot' }));
      const noRead = toolError(await call(ingester, 'get_spend_summary'));
      expect(noRead.code).to.equal('forbidden');
      expect(noRead.message).to.include('"read" scope');
      expect(answer(await call(ingester, 'authorize_payment', { agent_id: 'bot', endpoint: ENDPOINT, amount: '1' })).decision).to.equal('approved');
    } finally {
      await reader.close();
      await ingester.close();
    }
  });

  it("another team's agent and authorizations are refused, and nothing reaches that team's data", async () => {
    const other = await newTeam('mcp-other');
    await api().post('/api/v1/events').set(...other.auth).send({ events: [{ id: 'o-1', agent_id: 'other-bot', endpoint: ENDPOINT, method: 'GET', amount: '4' }] }).expect(200);
    const theirs = (await api().post('/api/v1/authorizations').set(...other.auth).send({ agent_id: 'other-bot', endpoint: ENDPOINT, amount: '2' }).expect(200)).body;
    const before = await httpGet(team, '/api/v1/analytics/summary');
    for (const [tool, args] of [
      ['authorize_payment', { agent_id: 'other-bot', endpoint: ENDPOINT, amount: '1' }],
      ['record_payment', { id: 'x-1', agent_id: 'other-bot', endpoint: ENDPOINT, method: 'GET', amount: '1' }],
      ['get_budget_status', { agent_id: 'other-bot' }],
      ['authorize_payment', { agent_id: 'ghost', endpoint: ENDPOINT, amount: '1' }],
    ] as const) {
      const refused = toolError(await call(client, tool, args));
      expect(refused.code, tool).to.equal('not_found');
      expect(refused.details, tool).to.deep.equal([{ field: 'agent_id', message: 'is not an agent of this team' }]);
      expect(refused.message, tool).to.include('agent_id');
    }
    expect(toolError(await call(client, 'get_spend_summary', { agent: 'other-bot' })).details).to.deep.equal([{ field: 'agent', message: 'is not an agent of this team' }]);
    for (const tool of ['wait_for_decision', 'capture_payment', 'void_authorization']) {
      expect(toolError(await call(client, tool, { authorization_id: theirs.id })).code, tool).to.equal('not_found');
    }
    // Their authorization is still held, their spend and ours unchanged.
    expect((await httpGet(other, `/api/v1/authorizations/${theirs.id}`)).status).to.equal('held');
    expect(await httpGet(other, '/api/v1/analytics/summary')).to.include({ totalSpend: '4', count: 1 });
    expect(await httpGet(team, '/api/v1/analytics/summary')).to.deep.include({ totalSpend: before.totalSpend, count: before.count });
    expect((await httpGet(team, '/api/v1/agents')).data.map((a: { agentId: string }) => a.agentId)).to.not.include('other-bot');
  });

  it('a record costs a token of the key\'s records bucket, as on the ingest routes', async () => {
    const limited = await connect(server.url, (await keyWith(team, { scopes: ['ingest'], rateLimit: { records_per_second: 1 } })).apiKey);
    try {
      const record = (id: string) => ({ id, agent_id: 'bot', endpoint: ENDPOINT, method: 'GET', amount: '0.01' });
      answer(await call(limited, 'record_payment', record(`rl-${Date.now()}-1`)));
      const refused = toolError(await call(limited, 'record_payment', record(`rl-${Date.now()}-2`)));
      expect(refused.code).to.equal('rate_limited');
      expect(refused.details).to.deep.equal([{ field: 'rate_limit.records_per_second', message: 'is 1' }]);
    } finally {
      await limited.close();
    }
  });

  it('without a valid key /mcp is a 401 in the API error shape; GET and DELETE are 405', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
    for (const headers of [{}, { Authorization: 'Bearer ss_not_a_key' }, { Authorization: 'Basic abc' }] as Record<string, string>[]) {
      const res = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(initialize),
      });
      expect(res.status, JSON.stringify(headers)).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.equal('Bearer realm="spendscope"');
      expect(errorOf(await res.json()).code).to.equal('unauthorized');
    }
    let refused: unknown;
    await connect(server.url, 'ss_not_a_key').catch((err: unknown) => (refused = err));
    expect((refused as { code?: number } | undefined)?.code).to.equal(401);
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${server.url}/mcp`, { method, headers: { Authorization: `Bearer ${team.apiKey}` } });
      expect(res.status, method).to.equal(405);
      expect(res.headers.get('allow')).to.equal('POST');
      expect(errorOf(await res.json()).message).to.equal(`${method} is not allowed on /mcp; use POST`);
    }
  });
});

describe('MCP at /mcp: a failure inside a tool', function () {
  this.timeout(60_000);

  it('is a tool error with a generic message and the request id, logged with its cause, never a stack', async () => {
    const app: App = appWith([], {
      readEvents: async () => {
        throw new Error('secret detail of the store');
      },
    });
    const server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const team = await newTeam('mcp-fail');
    await registerAgent(team, 'bot');
    const client = await connect(url, team.apiKey);
    try {
      const result = await call(client, 'get_budget_status', { agent_id: 'bot' });
      const error = toolError(result);
      expect(error.code).to.equal('internal_error');
      expect(error.message).to.equal('Internal error; quote the request id when reporting it');
      expect(JSON.stringify(result)).to.not.include('secret detail');
      expect(JSON.stringify(result)).to.not.match(/\bat .+\.js:\d+/);
      const logged = testEnv().logLines.find((l) => l.msg === 'mcp: tool call failed' && (l.req as { id?: string } | undefined)?.id === error.requestId) as { err?: { message?: string; stack?: string } } | undefined;
      expect(logged?.err?.message).to.equal('secret detail of the store');
      expect(logged?.err?.stack).to.be.a('string');
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
