import { expect } from 'chai';
import BigNumber from 'bignumber.js';
import type { Team } from '../helpers/common.js';
import { api, errorOf, newTeam, describeOnEachRegistry } from '../helpers/context.js';


const event = (agent_id: string, amount: string, created_at: number, extra: Record<string, unknown> = {}) => ({
  agent_id,
  endpoint: 'https://api.example.com/v1/x',
  method: 'POST',
  amount,
  created_at,
  ...extra,
});

async function send(team: Team, events: object[]) {
  await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
}

describeOnEachRegistry('agents', () => {
  describe('POST /agents', () => {
    it('creates an agent: 201 with its summary, zero statistics and a Location', async () => {
      const team = await newTeam();
      const res = await api()
        .post('/api/v1/agents')
        .set(...team.auth)
        .send({ external_id: 'bot-1', name: 'Research bot', authorized_by: 'alice@example.com' })
        .expect(201);
      expect(res.headers.location).to.equal('/api/v1/agents/bot-1');
      expect(res.body).to.include({ agentId: 'bot-1', name: 'Research bot', totalSpend: '0', transactionCount: 0, lastActive: null, authorizedBy: 'alice@example.com' });
      expect(Date.parse(res.body.createdAt)).to.be.closeTo(Date.now(), 10_000);
      const got = await api().get('/v1/agents/bot-1').set(...team.auth).expect(200);
      expect(got.body).to.deep.equal(res.body);
    });

    it('authorized_by may be omitted', async () => {
      const team = await newTeam();
      const res = await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'bot-2', name: 'B' }).expect(201);
      expect(res.body.authorizedBy).to.equal(null);
    });

    it('an external_id the team already registered is a 409; another team may use it', async () => {
      const team = await newTeam();
      await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'dup', name: 'first' }).expect(201);
      const res = await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'dup', name: 'second' }).expect(409);
      expect(errorOf(res.body).code).to.equal('conflict');
      const got = await api().get('/api/v1/agents/dup').set(...team.auth).expect(200);
      expect(got.body.name).to.equal('first');
      await api().post('/api/v1/agents').set(...(await newTeam()).auth).send({ external_id: 'dup', name: 'mine' }).expect(201);
    });

    const invalid: [string, object, string][] = [
      ['missing external_id', { name: 'x' }, 'external_id'],
      ['missing name', { external_id: 'x' }, 'name'],
      ['empty external_id', { external_id: '', name: 'x' }, 'external_id'],
      ['empty name', { external_id: 'x', name: '' }, 'name'],
      ['external_id of 257 chars', { external_id: 'a'.repeat(257), name: 'x' }, 'external_id'],
      ['name of 257 chars', { external_id: 'x', name: 'n'.repeat(257) }, 'name'],
      ['a number as name', { external_id: 'x', name: 5 }, 'name'],
      ['an unknown field', { external_id: 'x', name: 'y', owner: 'z' }, 'owner'],
    ];
    for (const [what, body, field] of invalid) {
      it(`${what}: 400 naming ${field}`, async () => {
        const res = await api().post('/api/v1/agents').set(...(await newTeam()).auth).send(body).expect(400);
        expect((errorOf(res.body).details as { field: string }[]).map((d) => d.field)).to.include(field);
      });
    }

    it('accepts 256-char ids and names', async () => {
      const id = 'i'.repeat(256);
      await api().post('/api/v1/agents').set(...(await newTeam()).auth).send({ external_id: id, name: 'n'.repeat(256) }).expect(201);
    });

    it('an agent discovered from events, then registered, keeps its statistics and takes the name', async () => {
      const team = await newTeam();
      const t = Date.now() - 3_600_000;
      await send(team, [event('seen', '1.000000000000000001', t), event('seen', '2.5', t + 1000)]);
      const discovered = await api().get('/api/v1/agents/seen').set(...team.auth).expect(200);
      expect(discovered.body).to.include({ name: 'seen', authorizedBy: null, totalSpend: '3.500000000000000001', transactionCount: 2 });
      const res = await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'seen', name: 'Seen bot', authorized_by: 'bob' }).expect(201);
      expect(res.body).to.include({ agentId: 'seen', name: 'Seen bot', authorizedBy: 'bob', totalSpend: '3.500000000000000001', transactionCount: 2 });
      expect(res.body.lastActive).to.equal(new Date(t + 1000).toISOString());
      expect(res.body.createdAt).to.equal(discovered.body.createdAt);
      await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'seen', name: 'again' }).expect(409);
    });
  });

  describe('GET /agents/:id', () => {
    it('is a 404 for an unknown id and for another team\'s agent', async () => {
      const team = await newTeam();
      const other = await newTeam();
      await api().post('/api/v1/agents').set(...other.auth).send({ external_id: 'theirs', name: 'x' }).expect(201);
      const res = await api().get('/api/v1/agents/theirs').set(...team.auth).expect(404);
      expect(errorOf(res.body).code).to.equal('not_found');
      await api().get('/api/v1/agents/nobody').set(...team.auth).expect(404);
    });

    it('finds ids with characters a path must escape', async () => {
      const team = await newTeam();
      const id = 'team/a bot?#1';
      await api().post('/api/v1/agents').set(...team.auth).send({ external_id: id, name: 'x' }).expect(201);
      const res = await api().get(`/api/v1/agents/${encodeURIComponent(id)}`).set(...team.auth).expect(200);
      expect(res.body.agentId).to.equal(id);
    });

    it('statistics equal the events ingested, exactly, and duplicates do not count', async () => {
      const team = await newTeam();
      const t = Date.now() - 7_200_000;
      const amounts = ['0.000000000000000001', '123456789.123456789123456789', '0.1', '0.2', '7'];
      const events = amounts.map((amount, i) => ({ ...event('exact', amount, t + i), id: `exact-${i}` }));
      await send(team, events);
      await send(team, events.slice(0, 2)); // re-sent: duplicates
      const res = await api().get('/api/v1/agents/exact').set(...team.auth).expect(200);
      const sum = amounts.reduce((s, a) => s.plus(a), new BigNumber(0));
      expect(new BigNumber(res.body.totalSpend).isEqualTo(sum), res.body.totalSpend).to.equal(true);
      expect(res.body.transactionCount).to.equal(amounts.length);
      expect(res.body.lastActive).to.equal(new Date(t + 4).toISOString());
    });

    it('lastActive is the latest event time, also when a late event arrives after a newer one', async () => {
      const team = await newTeam();
      const t = Date.now() - 600_000;
      await send(team, [event('late', '1', t)]);
      await send(team, [event('late', '1', t - 86_400_000)]);
      const res = await api().get('/api/v1/agents/late').set(...team.auth).expect(200);
      expect(res.body.lastActive).to.equal(new Date(t).toISOString());
    });
  });

  describe('GET /agents', () => {
    it('lists discovered and created agents in one list, most recent activity first, then without events', async () => {
      const team = await newTeam();
      const t = Date.now() - 3_600_000;
      await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'idle', name: 'Idle' }).expect(201);
      await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'created-active', name: 'Active' }).expect(201);
      await send(team, [event('created-active', '1', t + 2000), event('discovered', '2', t + 1000), event('older', '3', t)]);
      const res = await api().get('/api/v1/agents').set(...team.auth).expect(200);
      expect(res.body.data.map((a: { agentId: string }) => a.agentId)).to.deep.equal(['created-active', 'discovered', 'older', 'idle']);
      expect(res.body.next_cursor).to.equal(null);
      expect(res.body.data[1]).to.include({ name: 'discovered', totalSpend: '2', transactionCount: 1 });
    });

    it('pages through every agent with no duplicates or gaps', async () => {
      const team = await newTeam();
      const t = Date.now() - 3_600_000;
      // 23 with events (some at the same ms, to test ties) and 6 without.
      const events = Array.from({ length: 23 }, (_, i) => event(`a${String(i).padStart(2, '0')}`, `${i}.5`, t + Math.floor(i / 3) * 1000));
      await send(team, events);
      for (let i = 0; i < 6; i++) await api().post('/api/v1/agents').set(...team.auth).send({ external_id: `z${i}`, name: `Z${i}` }).expect(201);
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: { body: { data: { agentId: string; totalSpend: string }[]; next_cursor: string | null } } = await api()
          .get(`/api/v1/agents?limit=4${cursor ? `&cursor=${cursor}` : ''}`)
          .set(...team.auth)
          .expect(200);
        expect(res.body.data.length).to.be.at.most(4);
        seen.push(...res.body.data.map((a) => a.agentId));
        cursor = res.body.next_cursor;
        pages++;
      } while (cursor);
      expect(pages).to.equal(Math.ceil(29 / 4));
      expect(seen).to.have.length(29);
      expect(new Set(seen).size).to.equal(29);
      const full = await api().get('/api/v1/agents?limit=200').set(...team.auth).expect(200);
      expect(seen).to.deep.equal(full.body.data.map((a: { agentId: string }) => a.agentId));
      expect(seen.slice(-6)).to.deep.equal(['z0', 'z1', 'z2', 'z3', 'z4', 'z5']);
    });

    it('q filters by id or name prefix, literally', async () => {
      const team = await newTeam();
      for (const [id, name] of [['alpha-1', 'Search'], ['beta', 'Alpha helper'], ['gamma', 'Other'], ['a_b', 'x'], ['axb', 'y']]) {
        await api().post('/api/v1/agents').set(...team.auth).send({ external_id: id, name }).expect(201);
      }
      const ids = async (q: string) =>
        (await api().get(`/api/v1/agents?q=${encodeURIComponent(q)}`).set(...team.auth).expect(200)).body.data.map((a: { agentId: string }) => a.agentId).sort();
      expect(await ids('alpha')).to.deep.equal(['alpha-1', 'beta']);
      expect(await ids('Sea')).to.deep.equal(['alpha-1']);
      expect(await ids('a_')).to.deep.equal(['a_b']);
      expect(await ids('nothing')).to.deep.equal([]);
    });

    it('shows only the team\'s own agents', async () => {
      const team = await newTeam();
      await send((await newTeam()), [event('foreign', '1', Date.now() - 1000)]);
      const res = await api().get('/api/v1/agents').set(...team.auth).expect(200);
      expect(res.body.data).to.deep.equal([]);
    });

    const bad: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=x', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
      [`cursor=${Buffer.from('{"id":1}').toString('base64url')}`, 'cursor'],
      ['sort=name', 'sort'],
    ];
    for (const [query, field] of bad) {
      it(`?${query} is a 400 naming ${field}`, async () => {
        const res = await api().get(`/api/v1/agents?${query}`).set(...(await newTeam()).auth).expect(400);
        expect((errorOf(res.body).details as { field: string }[]).map((d) => d.field)).to.include(field);
      });
    }
  });

  describe('PATCH and DELETE /agents/:id', () => {
    it('PATCH changes name, authorized_by and status; fields left out keep their value; the list shows it', async () => {
      const team = await newTeam();
      await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'bot', name: 'Bot', authorized_by: 'alice@example.com' }).expect(201);
      const renamed = await api().patch('/api/v1/agents/bot').set(...team.auth).send({ name: 'Research bot' }).expect(200);
      expect(renamed.body).to.include({ agentId: 'bot', name: 'Research bot', authorizedBy: 'alice@example.com', status: 'active' });
      const suspended = await api().patch('/api/v1/agents/bot').set(...team.auth).send({ status: 'suspended', authorized_by: null }).expect(200);
      expect(suspended.body).to.include({ name: 'Research bot', authorizedBy: null, status: 'suspended' });
      const list = await api().get('/api/v1/agents').set(...team.auth).expect(200);
      expect(list.body.data.map((a: { agentId: string; status: string }) => [a.agentId, a.status])).to.deep.equal([['bot', 'suspended']]);
      // A suspended agent's events are still stored and counted.
      await send(team, [event('bot', '0.5', Date.now() - 1000)]);
      const got = await api().get('/api/v1/agents/bot').set(...team.auth).expect(200);
      expect(got.body).to.include({ status: 'suspended', totalSpend: '0.5', transactionCount: 1 });
      const back = await api().patch('/api/v1/agents/bot').set(...team.auth).send({ status: 'active' }).expect(200);
      expect(back.body.status).to.equal('active');
    });

    it('PATCH of a discovered agent works; unknown ids are 404; bad fields are 400 naming them', async () => {
      const team = await newTeam();
      await send(team, [event('seen', '1', Date.now() - 1000)]);
      const res = await api().patch('/api/v1/agents/seen').set(...team.auth).send({ name: 'Seen', authorized_by: 'bob@example.com' }).expect(200);
      expect(res.body).to.include({ name: 'Seen', authorizedBy: 'bob@example.com', totalSpend: '1' });
      expect(errorOf((await api().patch('/api/v1/agents/nobody').set(...team.auth).send({ name: 'x' }).expect(404)).body).code).to.equal('not_found');
      for (const [body, field] of [[{ status: 'paused' }, 'status'], [{ name: '' }, 'name'], [{ agentId: 'x' }, 'agentId']] as const) {
        const bad = await api().patch('/api/v1/agents/seen').set(...team.auth).send(body).expect(400);
        expect((errorOf(bad.body).details as { field: string }[]).map((d) => d.field)).to.include(field);
      }
    });

    it("DELETE removes the registration, keeps the events; another team's agent is a 404", async () => {
      const team = await newTeam();
      const other = await newTeam();
      await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'gone', name: 'Gone' }).expect(201);
      await send(team, [event('gone', '2', Date.now() - 1000)]);
      await api().delete('/api/v1/agents/gone').set(...other.auth).expect(404);
      await api().delete('/api/v1/agents/gone').set(...team.auth).expect(204);
      await api().get('/api/v1/agents/gone').set(...team.auth).expect(404);
      await api().delete('/api/v1/agents/gone').set(...team.auth).expect(404);
      const count = await api().post('/api/v1/audit/count').set(...team.auth).send({ agentId: 'gone' }).expect(200);
      expect(count.body.count).to.equal(1);
      // Sending again discovers it again, as a new agent (name = id).
      await send(team, [event('gone', '1', Date.now())]);
      const again = await api().get('/api/v1/agents/gone').set(...team.auth).expect(200);
      expect(again.body).to.include({ name: 'gone', status: 'active', totalSpend: '3' });
    });
  });
});
