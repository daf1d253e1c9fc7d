import { expect } from 'chai';
import { api, errorOf, newTeam, describeOnEachRegistry } from '../helpers/context.js';
import { type Team } from '../helpers/common.js';


const EXAMPLE = {
  name: 'research budget',
  agents: ['agent-1', 'agent-2'],
  limits: [
    { kind: 'per_call', amount: '1.00' },
    { kind: 'per_hour', amount: '10' },
    { kind: 'daily', amount: '100' },
    { kind: 'per_endpoint', amount: '5', endpoint: 'api.example.com' },
  ],
  action: 'flag',
  active: true,
};

const create = (team: Team, body: object) => api().post('/api/v1/policies').set(...team.auth).send(body);
const fields = (body: unknown) => (errorOf(body).details as { field: string }[]).map((d) => d.field);

describeOnEachRegistry('policies', () => {
  describe('POST /policies', () => {
    it('creates the interface example: 201, amounts kept as sent, Location', async () => {
      const team = await newTeam();
      const res = await create(team, EXAMPLE).expect(201);
      expect(res.body).to.include({ name: 'research budget', action: 'flag', active: true, timezone: null });
      expect(res.body.id).to.match(/^pol_/);
      expect(res.body.agents).to.deep.equal(['agent-1', 'agent-2']);
      expect(res.body.limits).to.deep.equal(EXAMPLE.limits);
      expect(res.headers.location).to.equal(`/api/v1/policies/${res.body.id}`);
      const got = await api().get(`/v1/policies/${res.body.id}`).set(...team.auth).expect(200);
      expect(got.body).to.deep.equal(res.body);
    });

    it('defaults: every agent, action flag, active, UTC; endpoint patterns in stored form', async () => {
      const res = await create((await newTeam()), {
        name: 'all',
        limits: [
          { kind: 'per_endpoint', amount: '5', endpoint: '*.Example.COM' },
          { kind: 'per_endpoint', amount: '6', endpoint: 'HTTPS://API.Example.com/v1/Search' },
          { kind: 'daily', amount: '0.000000000000000001' },
        ],
        timezone: 'America/New_York',
      }).expect(201);
      expect(res.body).to.include({ action: 'flag', active: true, timezone: 'America/New_York' });
      expect(res.body.agents).to.deep.equal([]);
      expect(res.body.limits.map((l: { endpoint?: string }) => l.endpoint)).to.deep.equal(['*.example.com', 'https://api.example.com/v1/Search', undefined]);
    });

    const invalid: [string, object, string][] = [
      ['no name', { limits: EXAMPLE.limits }, 'name'],
      ['no limits', { name: 'x' }, 'limits'],
      ['empty limits', { name: 'x', limits: [] }, 'limits'],
      ['an unknown kind', { name: 'x', limits: [{ kind: 'fortnightly', amount: '1' }] }, 'limits[0].kind'],
      ['a number amount', { name: 'x', limits: [{ kind: 'daily', amount: 10 }] }, 'limits[0].amount'],
      ['a negative amount', { name: 'x', limits: [{ kind: 'daily', amount: '-1' }] }, 'limits[0].amount'],
      ['19 decimals', { name: 'x', limits: [{ kind: 'daily', amount: '0.0000000000000000001' }] }, 'limits[0].amount'],
      ['an exponent', { name: 'x', limits: [{ kind: 'daily', amount: '1e3' }] }, 'limits[0].amount'],
      ['per_endpoint without endpoint', { name: 'x', limits: [{ kind: 'per_endpoint', amount: '1' }] }, 'limits[0].endpoint'],
      ['endpoint on per_call', { name: 'x', limits: [{ kind: 'per_call', amount: '1', endpoint: 'a.com' }] }, 'limits[0].endpoint'],
      ['a bad host', { name: 'x', limits: [{ kind: 'per_endpoint', amount: '1', endpoint: 'not a host' }] }, 'limits[0].endpoint'],
      ['a wildcard inside', { name: 'x', limits: [{ kind: 'per_endpoint', amount: '1', endpoint: 'api.*.com' }] }, 'limits[0].endpoint'],
      ['a bad URL', { name: 'x', limits: [{ kind: 'per_endpoint', amount: '1', endpoint: 'https://' }] }, 'limits[0].endpoint'],
      ['a repeated limit', { name: 'x', limits: [{ kind: 'daily', amount: '1' }, { kind: 'daily', amount: '2' }] }, 'limits[1]'],
      ['an unknown zone', { name: 'x', limits: [{ kind: 'daily', amount: '1' }], timezone: 'Mars/Base' }, 'timezone'],
      ['an unknown action', { name: 'x', limits: [{ kind: 'daily', amount: '1' }], action: 'warn' }, 'action'],
      ['agents not strings', { name: 'x', limits: [{ kind: 'daily', amount: '1' }], agents: [1] }, 'agents[0]'],
      ['an unknown field', { name: 'x', limits: [{ kind: 'daily', amount: '1' }], severity: 'high' }, 'severity'],
    ];
    for (const [what, body, field] of invalid) {
      it(`${what}: 400 naming ${field}`, async () => {
        const res = await create((await newTeam()), body).expect(400);
        expect(fields(res.body)).to.include(field);
      });
    }
  });

  describe('GET, PATCH, DELETE /policies/:id', () => {
    it('PATCH changes only the fields sent, replacing agents and limits whole', async () => {
      const team = await newTeam();
      const created = (await create(team, { ...EXAMPLE, timezone: 'Europe/Berlin' }).expect(201)).body;
      const res = await api()
        .patch(`/api/v1/policies/${created.id}`)
        .set(...team.auth)
        .send({ limits: [{ kind: 'daily', amount: '150' }], agents: ['agent-3'], active: false })
        .expect(200);
      expect(res.body).to.include({ id: created.id, name: 'research budget', action: 'flag', active: false, timezone: 'Europe/Berlin', createdAt: created.createdAt });
      expect(res.body.limits).to.deep.equal([{ kind: 'daily', amount: '150' }]);
      expect(res.body.agents).to.deep.equal(['agent-3']);
      expect(Date.parse(res.body.updatedAt)).to.be.at.least(Date.parse(created.updatedAt));
      const cleared = await api().patch(`/api/v1/policies/${created.id}`).set(...team.auth).send({ timezone: null, action: 'block' }).expect(200);
      expect(cleared.body).to.include({ timezone: null, action: 'block' });
      expect((await api().get(`/api/v1/policies/${created.id}`).set(...team.auth).expect(200)).body).to.deep.equal(cleared.body);
    });

    it('PATCH validates like POST, and an empty body is a 400', async () => {
      const team = await newTeam();
      const { id } = (await create(team, EXAMPLE).expect(201)).body;
      const bad = await api().patch(`/api/v1/policies/${id}`).set(...team.auth).send({ limits: [{ kind: 'per_endpoint', amount: '1', endpoint: '*.*' }] }).expect(400);
      expect(fields(bad.body)).to.include('limits[0].endpoint');
      await api().patch(`/api/v1/policies/${id}`).set(...team.auth).send({}).expect(400);
      const zone = await api().patch(`/api/v1/policies/${id}`).set(...team.auth).send({ timezone: 'Nowhere/Town' }).expect(400);
      expect(fields(zone.body)).to.include('timezone');
    });

    it('DELETE removes it: 204, then 404', async () => {
      const team = await newTeam();
      const { id } = (await create(team, EXAMPLE).expect(201)).body;
      await api().delete(`/api/v1/policies/${id}`).set(...team.auth).expect(204);
      await api().get(`/api/v1/policies/${id}`).set(...team.auth).expect(404);
      await api().delete(`/api/v1/policies/${id}`).set(...team.auth).expect(404);
    });

    it('another team gets 404 on get, patch and delete, and changes nothing', async () => {
      const team = await newTeam();
      const other = await newTeam();
      const { id } = (await create(team, EXAMPLE).expect(201)).body;
      expect(errorOf((await api().get(`/api/v1/policies/${id}`).set(...other.auth).expect(404)).body).code).to.equal('not_found');
      await api().patch(`/api/v1/policies/${id}`).set(...other.auth).send({ name: 'stolen' }).expect(404);
      await api().delete(`/api/v1/policies/${id}`).set(...other.auth).expect(404);
      expect((await api().get(`/api/v1/policies/${id}`).set(...team.auth).expect(200)).body.name).to.equal('research budget');
    });
  });

  describe('GET /policies', () => {
    it('pages newest first with no duplicates or gaps, filters by agent and active', async () => {
      const team = await newTeam();
      const made: { id: string; createdAt: string }[] = [];
      for (let i = 0; i < 11; i++) {
        const agents = i % 3 === 0 ? [] : i % 3 === 1 ? ['a1'] : ['a2', 'a3'];
        made.push((await create(team, { name: `p${i}`, agents, limits: [{ kind: 'per_call', amount: `${i}` }], active: i !== 4 }).expect(201)).body);
      }
      // Newest first; two made in one millisecond are ordered by id (descending), as documented.
      const newestFirst = [...made].sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1)).map((p) => p.id);
      await create((await newTeam()), EXAMPLE).expect(201); // another team's
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res: { body: { data: { id: string }[]; next_cursor: string | null } } = await api()
          .get(`/api/v1/policies?limit=3${cursor ? `&cursor=${cursor}` : ''}`)
          .set(...team.auth)
          .expect(200);
        seen.push(...res.body.data.map((p) => p.id));
        cursor = res.body.next_cursor;
      } while (cursor);
      expect(seen).to.deep.equal(newestFirst);
      const forA1 = await api().get('/api/v1/policies?agent=a1&limit=200').set(...team.auth).expect(200);
      expect(forA1.body.data.map((p: { name: string }) => p.name).sort()).to.deep.equal(['p0', 'p1', 'p10', 'p3', 'p4', 'p6', 'p7', 'p9']);
      const inactive = await api().get('/api/v1/policies?active=false').set(...team.auth).expect(200);
      expect(inactive.body.data.map((p: { name: string }) => p.name)).to.deep.equal(['p4']);
    });

    for (const [query, field] of [['limit=0', 'limit'], ['limit=500', 'limit'], ['cursor=%%%', 'cursor'], ['active=maybe', 'active'], ['name=x', 'name']]) {
      it(`?${query} is a 400 naming ${field}`, async () => {
        const res = await api().get(`/api/v1/policies?${query}`).set(...(await newTeam()).auth).expect(400);
        expect(fields(res.body)).to.include(field);
      });
    }
  });

  it('team usage counts agents, active policies and this month\'s events and spend', async () => {
    const team = await newTeam();
    await create(team, EXAMPLE).expect(201);
    await create(team, { ...EXAMPLE, active: false }).expect(201);
    await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'registered', name: 'r' }).expect(201);
    const now = Date.now();
    const monthStart = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1);
    const events = [
      { agent_id: 'x', endpoint: 'https://a.com/', method: 'GET', amount: '0.1', created_at: now - 1000 },
      { agent_id: 'y', endpoint: 'https://a.com/', method: 'GET', amount: '0.200000000000000001', created_at: Math.max(monthStart, now - 5000) },
      { agent_id: 'x', endpoint: 'https://a.com/', method: 'GET', amount: '99', created_at: monthStart - 1 }, // last month
    ];
    await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
    const res = await api().get('/api/v1/team').set(...team.auth).expect(200);
    expect(res.body.usage).to.include({ events: 2, spend: '0.300000000000000001', agents: 3, activePolicies: 1, openAlerts: 0, activeApiKeys: 1 });
  });
});
