/** Named API keys with scopes: what each key may do, revocation, expiry, rotation. */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiStorage } from '@x402sentinel/x402';
import Database from 'better-sqlite3';
import pg from 'pg';
import { bearer, sleep, type Team } from '../helpers/common.js';
import { api, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { sdkRecord } from '../ingest/fixtures.js';

/** POST /keys is the subject here: any body, and the answer's no-store checked every time. */
async function createKey(team: Team, body: object): Promise<{ apiKey: string; id: string; scopes: string[]; name: string }> {
  const res = await api().post('/api/v1/keys').set(...team.auth).send(body).expect(201);
  expect(res.headers['cache-control']).to.equal('no-store');
  return res.body;
}

describeOnEachRegistry('API keys with scopes', function (dialect) {
  this.timeout(60_000);

  it('the first key of a team is an admin key named default; POST /keys issues named keys, GET /keys lists metadata only', async () => {
    const team = await newTeam();
    const agent = await createKey(team, { name: 'research-agent', scopes: ['read', 'ingest'] });
    expect(agent).to.include({ name: 'research-agent' });
    expect(agent.scopes).to.deep.equal(['ingest', 'read']);
    expect(agent.apiKey).to.match(/^ss_/);
    const list = await api().get('/api/v1/keys').set(...team.auth).expect(200);
    expect(list.body.data.map((k: { name: string; scopes: string[] }) => [k.name, k.scopes])).to.deep.equal([
      ['research-agent', ['ingest', 'read']],
      ['default', ['admin']],
    ]);
    expect(JSON.stringify(list.body)).to.not.include(agent.apiKey);
  });

  it('bad key requests are 400s naming the field', async () => {
    const team = await newTeam();
    for (const [body, field] of [
      [{ name: 'x', scopes: [] }, 'scopes'],
      [{ name: 'x', scopes: ['write'] }, 'scopes[0]'],
      [{ scopes: ['read'] }, 'name'],
      [{ name: 'x', scopes: ['read'], expires_at: 'tomorrow' }, 'expires_at'],
      [{ name: 'x', scopes: ['read'], expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
    ] as const) {
      const res = await api().post('/api/v1/keys').set(...team.auth).send(body).expect(400);
      expect((errorOf(res.body).details as { field: string }[]).map((d) => d.field), JSON.stringify(body)).to.include(field);
    }
  });

  describe('each scope allowed and refused on each route family', () => {
    let team: Team;
    const keys: Record<string, string> = {};
    before(async () => {
      team = await newTeam();
      for (const scopes of [['ingest'], ['read'], ['ingest', 'read'], ['admin']]) keys[scopes.join('+')] = (await createKey(team, { name: scopes.join('+'), scopes })).apiKey;
    });

    const record = () => ({ agent_id: 'a1', endpoint: 'https://api.example.com/x', method: 'GET', amount: '0.1' });
    // [method, path, body, the scope it needs]
    const routes: [string, string, object | undefined, string][] = [
      ['post', '/api/v1/events', { events: [record()] }, 'ingest'],
      ['post', '/api/v1/audit/batch', { records: [record()] }, 'ingest'],
      ['post', '/v1/audit/query', {}, 'read'],
      ['post', '/audit/summarize', {}, 'read'],
      ['post', '/api/v1/audit/count', {}, 'read'],
      ['get', '/api/v1/audit/abc', undefined, 'read'],
      ['get', '/api/v1/analytics/summary', undefined, 'read'],
      ['get', '/api/v1/analytics/by-asset', undefined, 'read'],
      ['get', '/api/v1/agents', undefined, 'read'],
      ['post', '/api/v1/agents', { external_id: `bot-${Math.random()}`, name: 'Bot' }, 'admin'],
      ['patch', '/api/v1/agents/a1', { name: 'A' }, 'admin'],
      ['delete', '/api/v1/agents/nobody', undefined, 'admin'],
      ['get', '/api/v1/policies', undefined, 'read'],
      ['post', '/api/v1/policies', { name: 'p', limits: [{ kind: 'daily', amount: '10' }], action: 'flag' }, 'admin'],
      ['delete', '/api/v1/policies/pol_nothing', undefined, 'admin'],
      ['get', '/api/v1/alerts', undefined, 'read'],
      ['patch', '/api/v1/alerts/alert_nothing', {}, 'admin'],
      ['get', '/api/v1/team', undefined, 'read'],
      ['get', '/api/v1/keys', undefined, 'read'],
      ['get', '/api/v1/audit-log', undefined, 'admin'],
      ['post', '/api/v1/keys', { name: 'k', scopes: ['read'] }, 'admin'],
      ['delete', '/api/v1/keys/key_nothing', undefined, 'admin'],
    ];
    for (const [method, path, body, needs] of routes) {
      it(`${method.toUpperCase()} ${path} needs ${needs}`, async () => {
        for (const [held, key] of Object.entries(keys)) {
          const scopes = held.split('+');
          const allowed = scopes.includes('admin') || scopes.includes(needs);
          let request = (api() as unknown as Record<string, (p: string) => ReturnType<ReturnType<typeof api>['get']>>)[method]!(path).set(...bearer(key));
          if (body) request = request.send(body);
          const res = await request;
          if (allowed) {
            expect(res.status, `${held} on ${method} ${path}: ${JSON.stringify(res.body)}`).to.not.equal(403);
            expect(res.status, `${held} on ${method} ${path}: ${JSON.stringify(res.body)}`).to.be.below(500);
          } else {
            expect(res.status, `${held} on ${method} ${path}`).to.equal(403);
            const error = errorOf(res.body);
            expect(error.code).to.equal('forbidden');
            expect(error.message).to.include(`"${needs}"`);
          }
        }
      });
    }
  });

  it('the published SDK works end to end with an ingest+read key', async () => {
    const team = await newTeam();
    const { apiKey } = await createKey(team, { name: 'sdk', scopes: ['ingest', 'read'] });
    const server = http.createServer(testEnv().app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const storage = new ApiStorage({ apiKey, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, batchSize: 5, flushIntervalMs: 3_600_000 });
    try {
      const records = Array.from({ length: 5 }, () => sdkRecord());
      for (const r of records) await storage.write(r as never);
      expect(await storage.count({})).to.equal(5);
      expect(await storage.getById(String(records[0]!.id))).to.deep.include({ id: records[0]!.id });
      expect((await storage.summarize({})).total_transactions).to.equal(5);
      expect((storage as unknown as { useFallback: boolean }).useFallback).to.equal(false);
    } finally {
      storage.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('a revoked key is refused from the next request on; the last admin key cannot be revoked', async () => {
    const team = await newTeam();
    const reader = await createKey(team, { name: 'grafana', scopes: ['read'] });
    await api().get('/api/v1/team').set(...bearer(reader.apiKey)).expect(200);
    await api().delete(`/api/v1/keys/${reader.id}`).set(...team.auth).expect(204);
    const refused = await api().get('/api/v1/team').set(...bearer(reader.apiKey)).expect(401);
    expect(errorOf(refused.body).code).to.equal('unauthorized');
    await api().delete(`/api/v1/keys/${reader.id}`).set(...team.auth).expect(404);
    // The team's only admin key.
    const [own] = (await api().get('/api/v1/keys').set(...team.auth).expect(200)).body.data as { id: string }[];
    const last = await api().delete(`/api/v1/keys/${own!.id}`).set(...team.auth).expect(409);
    expect(errorOf(last.body).code).to.equal('conflict');
    // With a second admin key, the first may go.
    const second = await createKey(team, { name: 'ops', scopes: ['admin'] });
    await api().delete(`/api/v1/keys/${own!.id}`).set(...bearer(second.apiKey)).expect(204);
    await api().get('/api/v1/team').set(...team.auth).expect(401);
    // Another team's key id is not found.
    const other = await newTeam();
    await api().delete(`/api/v1/keys/${second.id}`).set(...other.auth).expect(404);
  });

  it('a key revoked by another process (the team CLI, a second connection) is refused from the next request on', async () => {
    const team = await newTeam();
    const reader = await createKey(team, { name: 'grafana', scopes: ['read'] });
    // Found once, so the service has it in memory.
    await api().get('/api/v1/keys').set(...team.auth).expect(200);
    await api().get('/api/v1/agents').set(...bearer(reader.apiKey)).expect(200);
    if (dialect === 'sqlite') {
      const other = new Database(testEnv().registry.name);
      try {
        other.pragma('busy_timeout = 5000');
        expect(other.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?').run(Date.now(), reader.id).changes).to.equal(1);
      } finally {
        other.close();
      }
    } else {
      // Another instance's connection: the change reaches this one through PostgreSQL alone.
      const other = new pg.Client({ connectionString: testEnv().config.database!.url });
      await other.connect();
      try {
        expect((await other.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2', [Date.now(), reader.id])).rowCount).to.equal(1);
      } finally {
        await other.end();
      }
    }
    const refused = await api().get('/api/v1/agents').set(...bearer(reader.apiKey)).expect(401);
    expect(errorOf(refused.body).code).to.equal('unauthorized');
    await api().get('/api/v1/agents').set(...team.auth).expect(200);
  });

  it('an expired key is a 401 from its expiry on, and no longer listed', async () => {
    const team = await newTeam();
    const soon = await createKey(team, { name: 'short', scopes: ['read'], expires_at: new Date(Date.now() + 1500).toISOString() });
    await api().get('/api/v1/team').set(...bearer(soon.apiKey)).expect(200);
    await sleep(1600);
    await api().get('/api/v1/team').set(...bearer(soon.apiKey)).expect(401);
    const list = await api().get('/api/v1/keys').set(...team.auth).expect(200);
    expect(list.body.data.map((k: { name: string }) => k.name)).to.deep.equal(['default']);
  });

  it('rotate-key keeps the name, scopes and expiry; any key may rotate itself', async () => {
    const team = await newTeam();
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const reader = await createKey(team, { name: 'bi-job', scopes: ['read'], expires_at: expires });
    const rotated = await api().post('/api/v1/team/rotate-key').set(...bearer(reader.apiKey)).expect(200);
    expect(rotated.body).to.include({ name: 'bi-job', expiresAt: expires });
    expect(rotated.body.scopes).to.deep.equal(['read']);
    await api().get('/api/v1/team').set(...bearer(reader.apiKey)).expect(401);
    await api().get('/api/v1/team').set(...bearer(rotated.body.apiKey)).expect(200);
    await api().post('/api/v1/policies').set(...bearer(rotated.body.apiKey)).send({}).expect(403);
  });

  it('lastUsedAt is kept to the minute, without a write per request', async () => {
    const team = await newTeam();
    const key = await createKey(team, { name: 'used', scopes: ['read'] });
    const before = (await api().get('/api/v1/keys').set(...team.auth).expect(200)).body.data.find((k: { name: string }) => k.name === 'used');
    expect(before.lastUsedAt).to.equal(null);
    for (let i = 0; i < 5; i++) await api().get('/api/v1/team').set(...bearer(key.apiKey)).expect(200);
    await new Promise((resolve) => setImmediate(resolve));
    const after = (await api().get('/api/v1/keys').set(...team.auth).expect(200)).body.data.find((k: { name: string }) => k.name === 'used');
    expect(Date.parse(after.lastUsedAt) % 60_000).to.equal(0);
    expect(Date.now() - Date.parse(after.lastUsedAt)).to.be.below(120_000);
  });
});
