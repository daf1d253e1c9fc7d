/**
 * Teams of a cluster: three instances on one PostgreSQL. A team made by `npm run team:create`
 * (following DATABASE_URL) and one made by the operator API work on every instance at once; a
 * suspension made through one instance holds on all three, and so does letting the team in again.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.js';
import { call, startCluster, type Cluster } from '../helpers/cluster.js';
import { sdkId } from '../helpers/common.js';
import { run, tempDir } from '../helpers/processes.js';

const CLI = path.join(PROJECT_ROOT, 'dist/scripts/team-create.js');
const OPERATOR_KEY = crypto.randomBytes(32).toString('hex');

describe('teams on a cluster of three instances on PostgreSQL (spawned)', function () {
  this.timeout(180_000);
  let cluster: Cluster;

  before(async () => {
    cluster = await startCluster('teams', 3, { OPERATOR_API_KEY: OPERATOR_KEY });
  });
  after(async () => {
    await cluster?.stop();
  });

  /** The CLI run as an operator would beside the cluster: its environment, a DATA_DIR of its own (unused). */
  const teamCreate = (args: string[]) => {
    const { BOOTSTRAP_API_KEY: _bootstrap, OPERATOR_API_KEY: _operator, ...env } = cluster.env;
    return run(process.execPath, [CLI, ...args], { ...env, DATA_DIR: tempDir('cli-cluster') });
  };
  /** The same request to the three instances at once. */
  const onEvery = (key: string, method: string, route: string, body?: unknown) => Promise.all(cluster.instances.map((i) => call(i, key, method, route, body)));
  const mcpInitialize = (instance: number, key: string) =>
    fetch(`${cluster.instances[instance]!.baseUrl}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });

  it('team:create follows DATABASE_URL: its key works on every instance at once, and it is in the operator audit log', async () => {
    const result = await teamCreate(['--name', 'from-the-cli']);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stderr).to.include('PostgreSQL').and.not.include('DATA_DIR');
    // The URL's credentials are not printed.
    const password = new URL(cluster.databaseUrl).password;
    expect(password).not.to.equal('');
    expect(result.stderr).not.to.include(password);
    const made = JSON.parse(result.stdout) as { id: string; name: string; apiKey: string };
    for (const answer of await onEvery(made.apiKey, 'GET', '/api/v1/team')) {
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(answer.body).to.include({ id: made.id, name: 'from-the-cli' });
    }
    const taken = await teamCreate(['--name', 'from-the-cli']);
    expect(taken.code).to.equal(1);
    expect(taken.stderr).to.include('already exists');
    const log = await call(cluster.instances[2]!, OPERATOR_KEY, 'GET', `/api/v1/operator/audit-log?team_id=${made.id}`);
    expect(log.body.data).to.have.length(1);
    expect(log.body.data[0]).to.deep.include({ actor: 'team_create_cli', action: 'team.create', teamId: made.id });
  });

  it('--init with DATABASE_URL is refused, saying why, and creates nothing', async () => {
    const refused = await teamCreate(['--name', 'init-on-pg', '--init']);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.include('--init').and.include('DATABASE_URL').and.include('PostgreSQL');
    expect(refused.stdout).to.equal('');
    const listed = await call(cluster.instances[0]!, OPERATOR_KEY, 'GET', '/api/v1/operator/teams?name=init-on-pg');
    expect(listed.body.data).to.deep.equal([]);
  });

  it('a team made by the operator API on one instance works on the three at once; suspended through another, all three refuse it on REST and MCP; let in again through the third, all three take it', async () => {
    const created = await call(cluster.instances[0]!, OPERATOR_KEY, 'POST', '/api/v1/operator/teams', { name: 'signed-up' });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const key = created.body.key.apiKey as string;
    const teamId = created.body.team.id as string;
    for (const answer of await onEvery(key, 'GET', '/api/v1/team')) expect(answer.status).to.equal(200);
    const records = Array.from({ length: 3 }, (_, i) => ({ id: sdkId(), agent_id: 'a', endpoint: 'https://x.example/p', method: 'GET', amount: `${i + 1}`, asset: 'USDC' }));
    expect((await call(cluster.instances[1]!, key, 'POST', '/api/v1/audit/batch', { records })).status).to.equal(200);

    const suspended = await call(cluster.instances[1]!, OPERATOR_KEY, 'PATCH', `/api/v1/operator/teams/${teamId}`, { suspended: true });
    expect(suspended.status).to.equal(200);
    for (const answer of [...(await onEvery(key, 'GET', '/api/v1/team')), ...(await onEvery(key, 'POST', '/api/v1/audit/batch', { records }))]) {
      expect(answer.status).to.equal(403);
      expect(answer.body.error.code).to.equal('team_suspended');
    }
    for (let i = 0; i < 3; i++) {
      const res = await mcpInitialize(i, key);
      expect(res.status).to.equal(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).to.equal('team_suspended');
    }
    // The bootstrap team is untouched.
    for (const answer of await onEvery(cluster.key, 'GET', '/api/v1/team')) expect(answer.status).to.equal(200);

    expect((await call(cluster.instances[2]!, OPERATOR_KEY, 'PATCH', `/api/v1/operator/teams/${teamId}`, { suspended: false })).status).to.equal(200);
    for (const answer of await onEvery(key, 'GET', '/api/v1/team')) expect(answer.status).to.equal(200);
    for (let i = 0; i < 3; i++) expect((await mcpInitialize(i, key)).status).to.equal(200);
    // Its records were kept, and the operator sees their sum per asset.
    const seen = await call(cluster.instances[0]!, OPERATOR_KEY, 'GET', `/api/v1/operator/teams/${teamId}`);
    expect(seen.body.usage).to.deep.include({ records: 3, spendByAsset: [{ asset: 'USDC', amount: '6', records: 3 }] });
    const log = await call(cluster.instances[0]!, OPERATOR_KEY, 'GET', `/api/v1/operator/audit-log?team_id=${teamId}`);
    expect(log.body.data.map((a: { action: string }) => a.action)).to.deep.equal(['team.resume', 'team.suspend', 'team.create']);
  });

  it('on every instance the operator key is refused on team routes and a team key on operator routes', async () => {
    for (const answer of await onEvery(OPERATOR_KEY, 'GET', '/api/v1/team')) {
      expect(answer.status).to.equal(401);
      expect(answer.body.error.code).to.equal('unauthorized');
    }
    for (const answer of await onEvery(cluster.key, 'GET', '/api/v1/operator/teams')) {
      expect(answer.status).to.equal(401);
      expect(answer.body.error.message).to.equal('Invalid operator key');
    }
    for (const answer of await onEvery(cluster.key, 'POST', '/api/v1/operator/teams', { name: 'by-a-team-key' })) expect(answer.status).to.equal(401);
    const listed = await call(cluster.instances[0]!, OPERATOR_KEY, 'GET', '/api/v1/operator/teams?name=by-a-team-key');
    expect(listed.body.data).to.deep.equal([]);
  });
});
