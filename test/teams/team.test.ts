import { expect } from 'chai';
import { bearer, keyWith } from '../helpers/common.js';
import { api, errorOf, newTeam, describeOnEachRegistry } from '../helpers/context.js';

describeOnEachRegistry('team endpoints', () => {
  describe('GET /team', () => {
    it('returns the team of the key with its usage', async () => {
      const team = await newTeam('acme');
      const res = await api().get('/api/v1/team').set(...team.auth).expect(200);
      expect(res.body).to.have.keys('id', 'name', 'createdAt', 'currency', 'key', 'usage');
      expect(res.body.id).to.equal(team.teamId);
      expect(res.body.name).to.equal(team.name);
      expect(Date.parse(res.body.createdAt)).to.be.closeTo(Date.now(), 60_000);
      const now = new Date();
      expect(res.body.usage.period.start).to.equal(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
      expect(res.body.usage.period.end).to.equal(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
      expect(res.body.usage.activeApiKeys).to.equal(1);
    });

    it('names the key of the request with its scopes, so a client offers only what the key may do', async () => {
      const team = await newTeam('who');
      const admin = await api().get('/api/v1/team').set(...team.auth).expect(200);
      expect(admin.body.key.scopes).to.deep.equal(['admin']);
      const created = await keyWith(team, { name: 'grafana', scopes: ['read'] });
      const reader = await api().get('/api/v1/team').set(...bearer(created.apiKey)).expect(200);
      expect(reader.body.key).to.deep.equal({ id: created.id, name: 'grafana', scopes: ['read'] });
      expect(reader.body.id).to.equal(team.teamId);
    });

    it('shows each team only itself', async () => {
      const a = await newTeam('a');
      const b = await newTeam('b');
      const resA = await api().get('/v1/team').set(...a.auth).expect(200);
      const resB = await api().get('/v1/team').set(...b.auth).expect(200);
      expect(resA.body.id).to.equal(a.teamId);
      expect(resB.body.id).to.equal(b.teamId);
    });
  });

  describe('POST /team/rotate-key', () => {
    it('returns a new key once; the old key is rejected from the next request on', async () => {
      const team = await newTeam();
      const res = await api().post('/api/v1/team/rotate-key').set(...team.auth).expect(200);
      expect(res.headers['cache-control']).to.equal('no-store');
      expect(res.body).to.have.keys('apiKey', 'id', 'name', 'prefix', 'scopes', 'createdAt', 'expiresAt', 'rateLimit');
      expect(res.body.apiKey).not.to.equal(team.apiKey);
      expect(res.body.apiKey.startsWith(res.body.prefix)).to.equal(true);

      const old = await api().get('/api/v1/team').set(...team.auth).expect(401);
      expect(errorOf(old.body).code).to.equal('unauthorized');
      const fresh = await api().get('/api/v1/team').set(...bearer(res.body.apiKey)).expect(200);
      expect(fresh.body.id).to.equal(team.teamId);
      expect(fresh.body.usage.activeApiKeys).to.equal(1);
    });

    it('works under /v1 too, and the rotated-to key can rotate again', async () => {
      const team = await newTeam();
      const first = await api().post('/v1/team/rotate-key').set(...team.auth).expect(200);
      const second = await api().post('/v1/team/rotate-key').set(...bearer(first.body.apiKey)).expect(200);
      await api().get('/v1/team').set(...bearer(first.body.apiKey)).expect(401);
      await api().get('/v1/team').set(...bearer(second.body.apiKey)).expect(200);
    });

    it('concurrent rotations with one key leave exactly one working key', async () => {
      const team = await newTeam();
      const results = await Promise.all(
        Array.from({ length: 5 }, () => api().post('/api/v1/team/rotate-key').set(...team.auth)),
      );
      const issued = results.filter((r) => r.status === 200).map((r) => r.body.apiKey as string);
      expect(issued).to.have.length.greaterThan(0);
      for (const r of results.filter((x) => x.status !== 200)) expect(r.status).to.equal(401);
      const working = [];
      for (const key of issued) {
        const res = await api().get('/api/v1/team').set(...bearer(key));
        if (res.status === 200) working.push(key);
      }
      expect(working).to.have.length(1);
    });
  });
});
