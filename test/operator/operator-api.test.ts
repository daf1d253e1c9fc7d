/**
 * The operator API (/api/v1/operator): the service owner's key, apart from every team. Teams made,
 * listed with their usage, suspended on every interface and let in again; the audit log of it all.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import type { App } from '../../src/app.js';
import { createApp } from '../../src/app.js';
import { RateLimiter } from '../../src/limits/rate-limiter.js';
import { askAbove, bearer, keyWith, newPolicy, sdkId, sleep } from '../helpers/common.js';
import { api, describeOnEachRegistry, errorOf, newTeam, testEnv } from '../helpers/context.js';

const OPERATOR_KEY = `op-${crypto.randomBytes(24).toString('hex')}`;
const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest();
const OPERATOR = bearer(OPERATOR_KEY);

/** The shared app's deps with an operator key configured (and, when given, a limiter of its own). */
function operatorApp(rateLimiter?: RateLimiter): App {
  const deps = testEnv().deps;
  return createApp({ ...deps, config: { ...deps.config, operatorKeyHash: sha256(OPERATOR_KEY) }, ...(rateLimiter ? { rateLimiter } : {}) }, { validateResponses: true });
}

const uniqueName = (label: string) => `${label}-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;

const record = (agent: string, amount: string, asset: string) => ({
  id: sdkId(),
  agent_id: agent,
  endpoint: 'https://api.example.com/v1/search',
  method: 'GET',
  amount,
  asset,
  timestamp: new Date(Date.now() - 60_000).toISOString(),
});

describeOnEachRegistry('operator API', function () {
  this.timeout(60_000);
  let app: App;
  before(() => {
    app = operatorApp();
  });

  it('without an operator key configured, every operator route is a 404, as an unknown path', async () => {
    const team = await newTeam();
    for (const [method, path] of [['get', '/api/v1/operator/teams'], ['post', '/api/v1/operator/teams'], ['patch', `/api/v1/operator/teams/${team.teamId}`], ['get', '/v1/operator/audit-log']] as const) {
      const res = await api()[method](path).set(...OPERATOR).send({ name: 'x' });
      expect(res.status, `${method} ${path}`).to.equal(404);
      expect(errorOf(res.body).code).to.equal('not_found');
    }
  });

  it('creates a team and its first admin key, shown once, that works at once; a taken or bad name is refused naming the field', async () => {
    const name = uniqueName('acme');
    const res = await api(app).post('/api/v1/operator/teams').set(...OPERATOR).send({ name: `  ${name} ` }).expect(201);
    expect(res.headers['cache-control']).to.equal('no-store');
    expect(res.body.team).to.include({ name, suspended: false, suspendedAt: null });
    expect(res.body.key.scopes).to.deep.equal(['admin']);
    const own = await api().get('/api/v1/team').set(...bearer(res.body.key.apiKey)).expect(200);
    expect(own.body).to.include({ id: res.body.team.id, name });

    const taken = await api(app).post('/api/v1/operator/teams').set(...OPERATOR).send({ name }).expect(409);
    expect(errorOf(taken.body)).to.deep.include({ code: 'conflict', details: [{ field: 'name', message: 'is taken' }] });
    for (const [bad, message] of [['   ', 'must not be empty'], ['x'.repeat(65), 'must be at most 64 characters'], ['a\u0007b', 'must not hold control characters'], ['evil\u202egnp.exe', 'must not hold control characters'], ['a\u2028b', 'must not hold control characters']] as const) {
      const refused = await api(app).post('/api/v1/operator/teams').set(...OPERATOR).send({ name: bad }).expect(400);
      expect(errorOf(refused.body).details, JSON.stringify(bad)).to.deep.equal([{ field: 'name', message }]);
    }
    // One name, one spelling: NFD is stored as NFC, so the two spellings are the same name.
    const accented = uniqueName('cafe\u0301');
    const nfc = await api(app).post('/api/v1/operator/teams').set(...OPERATOR).send({ name: accented }).expect(201);
    expect(nfc.body.team.name).to.equal(accented.normalize('NFC'));
    await api(app).post('/api/v1/operator/teams').set(...OPERATOR).send({ name: accented.normalize('NFC') }).expect(409);
    // 64 characters of four bytes each are 64 characters.
    await api(app).post('/api/v1/operator/teams').set(...OPERATOR).send({ name: `${'💸'.repeat(56)}${crypto.randomBytes(4).toString('hex')}` }).expect(201);
    const extra = await api(app).post('/api/v1/operator/teams').set(...OPERATOR).send({ name: uniqueName('x'), admin: true }).expect(400);
    expect(errorOf(extra.body).details).to.deep.equal([{ field: 'admin', message: 'is not a known field' }]);
  });

  it('an operator key reads no team route, and no team key (admin or not) reaches an operator route', async () => {
    const team = await newTeam();
    for (const path of ['/api/v1/team', '/api/v1/agents', '/api/v1/analytics/summary', '/api/v1/audit-log']) {
      const res = await api(app).get(path).set(...OPERATOR);
      expect(res.status, path).to.equal(401);
      expect(errorOf(res.body).code).to.equal('unauthorized');
    }
    await api(app).post('/api/v1/audit/batch').set(...OPERATOR).send({ records: [record('a', '1', 'USDC')] }).expect(401);
    for (const [method, path] of [['get', '/api/v1/operator/teams'], ['post', '/api/v1/operator/teams'], ['get', `/api/v1/operator/teams/${team.teamId}`], ['patch', `/api/v1/operator/teams/${team.teamId}`], ['get', '/api/v1/operator/audit-log']] as const) {
      const res = await api(app)[method](path).set(...team.auth).send({ suspended: true, name: 'x' });
      expect(res.status, `${method} ${path}`).to.equal(401);
      expect(errorOf(res.body)).to.include({ code: 'unauthorized', message: 'Invalid operator key' });
      expect(res.headers['www-authenticate']).to.equal('Bearer realm="spendscope operator"');
    }
    const missing = await api(app).get('/api/v1/operator/teams').expect(401);
    expect(errorOf(missing.body).code).to.equal('unauthorized');
    // The team was never suspended by a team key's try.
    await api().get('/api/v1/team').set(...team.auth).expect(200);
  });

  it('lists teams newest first with their usage this month: records, spend per asset never added across assets, agents, active keys; pages by cursor; filters', async () => {
    const team = await newTeam('usage');
    const records = [record('a1', '1.25', 'USDC'), record('a1', '0.000001', 'USDC'), record('a2', '2', 'EURC'), record('a2', '0.5', 'ETH')];
    await api().post('/api/v1/audit/batch').set(...team.auth).send({ records }).expect(200);
    await keyWith(team, { name: 'reader', scopes: ['read'] });

    const one = await api(app).get(`/api/v1/operator/teams/${team.teamId}`).set(...OPERATOR);
    expect(one.status, JSON.stringify(testEnv().logLines.filter((l) => l.err).slice(-1))).to.equal(200);
    expect(one.body).to.include({ id: team.teamId, name: team.name, suspended: false });
    expect(one.body.usage.records).to.equal(4);
    expect(one.body.usage.spendByAsset).to.deep.equal([
      { asset: 'EURC', amount: '2', records: 1 },
      { asset: 'USDC', amount: '1.250001', records: 2 },
      { asset: 'ETH', amount: '0.5', records: 1 },
    ]);
    expect(one.body.usage.agents).to.equal(2);
    expect(one.body.usage.activeApiKeys).to.equal(2);
    // Last month: nothing.
    const now = new Date();
    const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
    const month = `${last.getUTCFullYear()}-${String(last.getUTCMonth() + 1).padStart(2, '0')}`;
    const before = await api(app).get(`/api/v1/operator/teams/${team.teamId}?month=${month}`).set(...OPERATOR).expect(200);
    expect(before.body.usage).to.deep.include({ records: 0, spendByAsset: [], period: { start: last.toISOString(), end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString() } });
    const badMonth = await api(app).get(`/api/v1/operator/teams/${team.teamId}?month=2026-13`).set(...OPERATOR).expect(400);
    expect(errorOf(badMonth.body).details).to.deep.equal([{ field: 'month', message: 'must be a month as YYYY-MM' }]);
    await api(app).get('/api/v1/operator/teams/team_nope').set(...OPERATOR).expect(404);

    const byName = await api(app).get(`/api/v1/operator/teams?name=${encodeURIComponent(team.name)}`).set(...OPERATOR).expect(200);
    expect(byName.body.data).to.have.length(1);
    expect(byName.body.data[0]).to.deep.equal(one.body);

    // Every team, page by page, newest first, each once.
    const seen: { id: string; createdAt: string }[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { id: string; createdAt: string }[]; next_cursor: string | null } } = await api(app)
        .get(`/api/v1/operator/teams?limit=7${cursor ? `&cursor=${cursor}` : ''}`)
        .set(...OPERATOR)
        .expect(200);
      expect(page.body.data.length).to.be.at.most(7);
      seen.push(...page.body.data);
      cursor = page.body.next_cursor;
    } while (cursor);
    const ids = seen.map((t) => t.id);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(ids).to.include(team.teamId);
    const total = Number((await testEnv().deps.db.get<{ n: number }>('SELECT count(*) AS n FROM teams'))!.n);
    expect(ids.length).to.be.at.least(total - 5); // teams made meanwhile by other suites land before the first page
    const times = seen.map((t) => Date.parse(t.createdAt));
    expect(times).to.deep.equal([...times].sort((a, b) => b - a));
    const badCursor = await api(app).get('/api/v1/operator/teams?cursor=abc').set(...OPERATOR).expect(400);
    expect(errorOf(badCursor.body).details).to.deep.equal([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
  });

  it('a suspended team is refused 403 team_suspended on REST and MCP (and its waits end so), its records kept; let in again, it works as before; each action once in the operator audit log', async () => {
    const team = await newTeam('suspend');
    const { apiKey: reader } = await keyWith(team, { name: 'reader', scopes: ['read'] });
    await api().post('/api/v1/audit/batch').set(...team.auth).send({ records: [record('s1', '3', 'USDC'), record('s1', '4', 'USDC')] }).expect(200);
    const other = await newTeam('bystander');

    const suspended = await api(app).patch(`/api/v1/operator/teams/${team.teamId}`).set(...OPERATOR).send({ suspended: true }).expect(200);
    expect(suspended.body).to.include({ id: team.teamId, suspended: true });
    expect(Date.parse(suspended.body.suspendedAt)).to.be.closeTo(Date.now(), 5_000);
    // Again: nothing changes, nothing is recorded.
    const again = await api(app).patch(`/api/v1/operator/teams/${team.teamId}`).set(...OPERATOR).send({ suspended: true }).expect(200);
    expect(again.body.suspendedAt).to.equal(suspended.body.suspendedAt);

    for (const key of [team.apiKey, reader]) {
      for (const [method, path] of [['get', '/api/v1/team'], ['get', '/api/v1/analytics/summary'], ['post', '/api/v1/audit/batch'], ['post', '/api/v1/authorizations'], ['post', '/api/v1/team/rotate-key']] as const) {
        const res = await api()[method](path).set(...bearer(key)).send(method === 'post' ? { records: [record('s1', '1', 'USDC')], agent_id: 's1', endpoint: 'https://x.example', amount: '1' } : undefined);
        expect(res.status, `${method} ${path}`).to.equal(403);
        expect(errorOf(res.body).code).to.equal('team_suspended');
        expect(errorOf(res.body).message).to.include('suspended');
      }
    }
    const mcp = await api()
      .post('/mcp')
      .set(...team.auth)
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    expect(mcp.status).to.equal(403);
    expect(errorOf(mcp.body).code).to.equal('team_suspended');
    // BI: ClickHouse's 403 (ACCESS_DENIED), naming the REST code. Served by the embedded engine only.
    const bi = () => api().post('/clickhouse/').set('Authorization', `Basic ${Buffer.from(`grafana:${reader}`).toString('base64')}`).send('SELECT count() AS n FROM events FORMAT JSONEachRow');
    const refusedBi = await bi();
    if (testEnv().deps.clickhouseHttp) {
      expect(refusedBi.status).to.equal(403);
      expect(refusedBi.headers['x-clickhouse-exception-code']).to.equal('497');
      expect(refusedBi.text).to.include('team_suspended');
    } else expect(refusedBi.status, 'no BI interface beside a ClickHouse server').to.equal(404);
    // Another team goes on as ever.
    await api().get('/api/v1/team').set(...other.auth).expect(200);

    const back = await api(app).patch(`/api/v1/operator/teams/${team.teamId}`).set(...OPERATOR).send({ suspended: false }).expect(200);
    expect(back.body).to.include({ suspended: false, suspendedAt: null });
    const summary = await api().get(`/api/v1/analytics/summary?from=${Date.now() - 86_400_000}&to=${Date.now() + 60_000}`).set(...bearer(reader)).expect(200);
    expect(summary.body.count).to.equal(2);
    if (testEnv().deps.clickhouseHttp) expect(JSON.parse((await bi().expect(200)).text)).to.deep.equal({ n: '2' });
    await api().post('/api/v1/audit/batch').set(...team.auth).send({ records: [record('s1', '1', 'USDC')] }).expect(200);

    const log = await api(app).get(`/api/v1/operator/audit-log?team_id=${team.teamId}`).set(...OPERATOR).expect(200);
    expect(log.body.data.map((a: { action: string }) => a.action)).to.deep.equal(['team.resume', 'team.suspend']);
    expect(log.body.data[1]).to.deep.include({ actor: 'operator_api', teamId: team.teamId, requestId: suspended.headers['x-request-id'] });
    expect(log.body.data[1].changes).to.deep.equal({ suspended: { before: false, after: true }, suspendedAt: { before: null, after: suspended.body.suspendedAt } });
    await api(app).patch('/api/v1/operator/teams/team_nope').set(...OPERATOR).send({ suspended: true }).expect(404);
    const badBody = await api(app).patch(`/api/v1/operator/teams/${team.teamId}`).set(...OPERATOR).send({ suspended: 'yes' }).expect(400);
    expect(errorOf(badBody.body).details).to.deep.equal([{ field: 'suspended', message: 'must be true or false' }]);
  });

  it('a wait begun before the suspension ends in 403 team_suspended, not the authorization', async () => {
    const team = await newTeam('waiter');
    await newPolicy(team, askAbove('1', ['w']));
    const pending = await api().post('/api/v1/authorizations').set(...team.auth).send({ agent_id: 'w', endpoint: 'https://x.example/p', amount: '5' }).expect(200);
    expect(pending.body.decision).to.equal('pending');
    const waiting = api().get(`/api/v1/authorizations/${pending.body.id}?wait=1`).set(...team.auth);
    const done = new Promise<{ status: number; body: unknown }>((resolve, reject) => waiting.end((err, res) => (err && !res ? reject(err) : resolve(res))));
    await sleep(200);
    await api(app).patch(`/api/v1/operator/teams/${team.teamId}`).set(...OPERATOR).send({ suspended: true }).expect(200);
    const res = await done;
    expect(res.status).to.equal(403);
    expect(errorOf(res.body).code).to.equal('team_suspended');
  });

  it('the operator key has a requests-a-second limit of its own', async () => {
    const limited = operatorApp(new RateLimiter({ requestsPerSecond: 2, recordsPerSecond: 0 }, () => 1_000));
    await api(limited).get('/api/v1/operator/audit-log?limit=1').set(...OPERATOR).expect(200);
    await api(limited).get('/api/v1/operator/audit-log?limit=1').set(...OPERATOR).expect(200);
    const refused = await api(limited).get('/api/v1/operator/audit-log?limit=1').set(...OPERATOR).expect(429);
    expect(errorOf(refused.body).code).to.equal('rate_limited');
    expect(refused.headers['retry-after']).to.match(/^\d+$/);
  });
});
