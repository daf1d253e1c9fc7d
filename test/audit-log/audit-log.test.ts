/** The management audit log: who changed what, when, with before and after; read-only. */
import { expect } from 'chai';
import type { ManagementChange } from '../../src/audit-log/repository.js';
import { bearer, keyWith, newPolicy, type Team } from '../helpers/common.js';
import { api, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';

/** An entry as the API answers it: the time as ISO 8601. */
type Change = Omit<ManagementChange, 'at'> & { at: string };

async function changes(team: Team, query = ''): Promise<Change[]> {
  const res = await api().get(`/api/v1/audit-log${query}`).set(...team.auth).expect(200);
  return res.body.data;
}

describeOnEachRegistry('management audit log', function () {
  this.timeout(60_000);

  it('records a policy change with who, what (before and after of the changed fields), when and the request id', async () => {
    const team = await newTeam();
    const alice = await keyWith(team, { name: 'alice', scopes: ['admin'] });
    const { id: policyId } = await newPolicy({ auth: bearer(alice.apiKey) }, { name: 'research', limits: [{ kind: 'daily', amount: '100' }] });
    const start = Date.now();
    const patched = await api()
      .patch(`/api/v1/policies/${policyId}`)
      .set(...bearer(alice.apiKey))
      .set('X-Request-Id', 'req-raise-budget')
      .send({ limits: [{ kind: 'daily', amount: '150' }], name: 'research' })
      .expect(200);
    expect(patched.headers['x-request-id']).to.equal('req-raise-budget');

    const [update, create] = await changes(team);
    expect(update).to.include({
      keyId: alice.id,
      keyName: 'alice',
      requestId: 'req-raise-budget',
      method: 'PATCH',
      route: '/policies/:id',
      action: 'policy.update',
      resourceType: 'policy',
      resourceId: policyId,
    });
    // Only what changed: the name was sent unchanged and is not listed.
    expect(update!.changes).to.deep.equal({ limits: { before: [{ kind: 'daily', amount: '100' }], after: [{ kind: 'daily', amount: '150' }] } });
    expect(Date.parse(update!.at)).to.be.within(start - 5, Date.now());
    expect(create).to.include({ action: 'policy.create', method: 'POST', route: '/policies', resourceId: policyId });
    expect(create!.changes.name).to.deep.equal({ before: null, after: 'research' });
    expect(create!.changes.action).to.deep.equal({ before: null, after: 'flag' });

    await api().delete(`/api/v1/policies/${policyId}`).set(...team.auth).expect(204);
    const [deleted] = await changes(team);
    expect(deleted).to.include({ action: 'policy.delete', keyName: 'default', resourceId: policyId });
    expect(deleted!.changes.limits).to.deep.equal({ before: [{ kind: 'daily', amount: '150' }], after: null });
  });

  it('records keys (never a secret), agents and alerts', async () => {
    const team = await newTeam();
    const created = await keyWith(team, { name: 'agent-key', scopes: ['ingest'], rateLimit: { records_per_second: 500 } });
    await api().delete(`/api/v1/keys/${created.id}`).set(...team.auth).expect(204);
    const keys = (await api().get('/api/v1/keys').set(...team.auth).expect(200)).body.data as { id: string; name: string }[];
    const defaultKeyId = keys.find((k) => k.name === 'default')!.id;
    const rotated = await api().post('/api/v1/team/rotate-key').set(...team.auth).expect(200);
    const auth = bearer(rotated.body.apiKey);

    await api().post('/api/v1/agents').set(...auth).send({ external_id: 'bot-1', name: 'Bot' }).expect(201);
    await api().patch('/api/v1/agents/bot-1').set(...auth).send({ status: 'suspended' }).expect(200);
    await api().delete('/api/v1/agents/bot-1').set(...auth).expect(204);

    // A record the client blocked raises an alert; resolving and reopening it are changes.
    const record = { agent_id: 'bot-2', endpoint: 'https://x.example/p', method: 'GET', amount: '1', policy_evaluation: 'blocked' };
    await api().post('/api/v1/events').set(...auth).send({ events: [record] }).expect(200);
    const alertId = (await api().get('/api/v1/alerts').set(...auth).expect(200)).body.data[0].id as string;
    await api().patch(`/api/v1/alerts/${alertId}`).set(...auth).send({ note: 'expected' }).expect(200);
    await api().patch(`/api/v1/alerts/${alertId}`).set(...auth).send({ status: 'open' }).expect(200);

    const log = (await api().get('/api/v1/audit-log?limit=200').set(...auth).expect(200)).body.data as Change[];
    expect(log.map((c) => c.action).reverse()).to.deep.equal([
      'key.create',
      'key.revoke',
      'key.rotate',
      'agent.create',
      'agent.update',
      'agent.delete',
      'alert.resolve',
      'alert.reopen',
    ]);
    const text = JSON.stringify(log);
    expect(text).to.not.include(created.apiKey);
    expect(text).to.not.include(rotated.body.apiKey);
    const byAction = Object.fromEntries(log.map((c) => [c.action, c]));
    expect(byAction['key.create']!.changes).to.deep.include({
      scopes: { before: null, after: ['ingest'] },
      rateLimit: { before: null, after: { requests_per_second: null, records_per_second: 500 } },
    });
    expect(byAction['key.rotate']).to.include({ resourceId: defaultKeyId, keyId: defaultKeyId });
    expect(byAction['key.rotate']!.changes).to.deep.equal({ replacedBy: { before: null, after: rotated.body.id } });
    expect(byAction['agent.update']!.changes).to.deep.equal({ status: { before: 'active', after: 'suspended' } });
    expect(byAction['alert.resolve']!.changes.status).to.deep.equal({ before: 'open', after: 'resolved' });
    expect(byAction['alert.resolve']!.changes.resolution).to.deep.equal({ before: null, after: 'expected' });
    expect(byAction['alert.reopen']!.changes.status).to.deep.equal({ before: 'resolved', after: 'open' });
  });

  it('filters by resource and by key, pages with a cursor, and shows each team only its own', async () => {
    const team = await newTeam();
    const bob = await keyWith(team, { name: 'bob', scopes: ['admin'] });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const key = i % 2 ? bob.apiKey : team.apiKey;
      ids.push((await newPolicy({ auth: bearer(key) }, { name: `p${i}`, limits: [{ kind: 'per_call', amount: '1' }] })).id);
    }
    await api().patch(`/api/v1/policies/${ids[0]}`).set(...team.auth).send({ active: false }).expect(200);

    const onFirst = await changes(team, `?resource_type=policy&resource_id=${ids[0]}`);
    expect(onFirst.map((c) => c.action)).to.deep.equal(['policy.update', 'policy.create']);
    const byBob = await changes(team, `?key_id=${bob.id}`);
    expect(byBob.map((c) => c.resourceId)).to.deep.equal([ids[3], ids[1]]);
    expect((await changes(team, '?resource_type=agent'))).to.deep.equal([]);

    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const res: { body: { data: Change[]; next_cursor: string | null } } = await api().get(`/api/v1/audit-log?resource_type=policy&limit=2${cursor ? `&cursor=${cursor}` : ''}`).set(...team.auth).expect(200);
      expect(res.body.data.length).to.be.at.most(2);
      seen.push(...res.body.data.map((c) => c.id));
      cursor = res.body.next_cursor;
    }
    // bob's key creation is a key change: 5 creations and 1 update of policies.
    expect(seen).to.have.length(6);
    expect(new Set(seen).size).to.equal(6);
    expect(await changes((await newTeam()))).to.deep.equal([]);
  });

  it('a change that fails records nothing', async () => {
    const team = await newTeam();
    await api().patch('/api/v1/policies/pol_nothing').set(...team.auth).send({ active: false }).expect(404);
    const keys = (await api().get('/api/v1/keys').set(...team.auth).expect(200)).body.data;
    await api().delete(`/api/v1/keys/${keys[0].id}`).set(...team.auth).expect(409); // the last admin key
    await api().post('/api/v1/policies').set(...team.auth).send({ name: 'x', limits: [{ kind: 'daily', amount: 'lots' }] }).expect(400);
    expect(await changes(team)).to.deep.equal([]);
  });

  it('needs an admin key, and cannot be changed: no route writes it and the table refuses updates and deletes', async () => {
    const team = await newTeam();
    const reader = await keyWith(team, { name: 'dashboard', scopes: ['read'] });
    const refused = await api().get('/api/v1/audit-log').set(...bearer(reader.apiKey)).expect(403);
    expect(errorOf(refused.body).details).to.deep.equal([{ field: 'scope', message: '"admin" is required' }]);
    for (const method of ['post', 'put', 'patch', 'delete'] as const) await api()[method]('/api/v1/audit-log').set(...team.auth).expect(405);
    const { db } = testEnv().deps;
    const refusal = (statement: string) => db.run(statement, [team.teamId]).then(() => 'changed', (err: Error) => err.message);
    expect(await refusal("UPDATE management_audit SET key_name = 'someone else' WHERE team_id = ?")).to.match(/append-only/);
    expect(await refusal('DELETE FROM management_audit WHERE team_id = ?')).to.match(/append-only/);
    const bad = await api().get('/api/v1/audit-log?resource_type=teams&limit=0').set(...team.auth).expect(400);
    expect((errorOf(bad.body).details as { field: string }[]).map((d) => d.field)).to.have.members(['resource_type', 'limit']);
  });
});
