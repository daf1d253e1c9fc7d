/** The agents store, the same tests on SQLite and on PostgreSQL. */
import { expect } from 'chai';
import { countAgents, createAgent, deleteAgent, findAgent, listAgents, updateAgent } from '../../src/agents/repository.js';
import { PolicyRevisions } from '../../src/policies/revisions.js';
import { forEachDialect } from '../helpers/dialects.js';

const revisions = new PolicyRevisions();

describe('agents store, on SQLite and PostgreSQL', function () {
  this.timeout(120_000);
  forEachDialect('agents', (open) => {
    const seed = async () => {
      const store = await open();
      await store.db.run('INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?), (?, ?, ?)', ['team_a', 'a', 1, 'team_b', 'b', 1]);
      return store;
    };

    it('registers, finds, changes and removes an agent; a second registration of one id is refused', async () => {
      const { db } = await seed();
      const created = await createAgent(db, 'team_a', { externalId: 'bot-1', name: 'Bot one', authorizedBy: 'alice' });
      expect(created).to.include({ externalId: 'bot-1', name: 'Bot one', authorizedBy: 'alice', status: 'active', lastEventAt: null });
      expect(await createAgent(db, 'team_a', { externalId: 'bot-1', name: 'again' })).to.equal(undefined);
      expect(await findAgent(db, 'team_a', 'bot-1')).to.deep.equal(created);
      expect(await findAgent(db, 'team_b', 'bot-1')).to.equal(undefined);

      expect(await updateAgent(db, 'team_a', 'bot-1', { status: 'suspended' }, revisions)).to.include({ name: 'Bot one', authorizedBy: 'alice', status: 'suspended' });
      expect(await updateAgent(db, 'team_a', 'bot-1', { authorizedBy: null, name: 'Renamed' }, revisions)).to.include({ name: 'Renamed', authorizedBy: null, status: 'suspended' });
      expect(await updateAgent(db, 'team_b', 'bot-1', { name: 'x' }, revisions)).to.equal(undefined);

      expect(await countAgents(db, 'team_a')).to.equal(1);
      expect(await deleteAgent(db, 'team_b', 'bot-1', revisions)).to.equal(false);
      expect(await deleteAgent(db, 'team_a', 'bot-1', revisions)).to.equal(true);
      expect(await findAgent(db, 'team_a', 'bot-1')).to.equal(undefined);
      expect(await countAgents(db, 'team_a')).to.equal(0);
    });

    it('an agent discovered from events becomes registered, keeping its history; registering it twice at once from two instances registers it once', async () => {
      const { db, another } = await seed();
      await db.run(`INSERT INTO agents (team_id, external_id, name, created_at, created_via, last_event_at) VALUES ('team_a', 'seen', 'seen', 5, 'events', 50)`);
      const outcomes = await Promise.all([db, another()].map((i) => createAgent(i, 'team_a', { externalId: 'seen', name: 'Seen bot' })));
      expect(outcomes.filter((o) => o !== undefined)).to.have.length(1);
      expect(await findAgent(db, 'team_a', 'seen')).to.include({ name: 'Seen bot', createdAt: 5, lastEventAt: 50 });
    });

    it('lists by latest activity (never-seen agents last), pages by cursor, and searches id or name by prefix, case-insensitively, % and _ literal', async () => {
      const { db } = await seed();
      const rows: [string, string, number | null][] = [
        ['alpha', 'Research Alpha', 300],
        ['beta', 'research beta', 100],
        ['gamma', 'Gamma', null],
        ['delta_1', 'Delta', 200],
        ['delta%2', 'Delta two', null],
      ];
      for (const [id, name, at] of rows) {
        await db.run(`INSERT INTO agents (team_id, external_id, name, created_at, created_via, last_event_at) VALUES ('team_a', ?, ?, 1, 'api', ?)`, [id, name, at]);
      }
      await db.run(`INSERT INTO agents (team_id, external_id, name, created_at, created_via) VALUES ('team_b', 'alpha', 'other team', 1, 'api')`);
      const ids = (list: { externalId: string }[]) => list.map((a) => a.externalId);
      const all = await listAgents(db, 'team_a', { limit: 10 });
      expect(ids(all)).to.deep.equal(['alpha', 'delta_1', 'beta', 'delta%2', 'gamma']);
      const first = await listAgents(db, 'team_a', { limit: 2 });
      const last = first.at(-1)!;
      const second = await listAgents(db, 'team_a', { limit: 2, after: { lastEventAt: last.lastEventAt, externalId: last.externalId } });
      const third = await listAgents(db, 'team_a', { limit: 2, after: { lastEventAt: second.at(-1)!.lastEventAt, externalId: second.at(-1)!.externalId } });
      expect([...ids(first), ...ids(second), ...ids(third)]).to.deep.equal(ids(all));
      expect(ids(await listAgents(db, 'team_a', { limit: 10, q: 'RESEARCH' }))).to.deep.equal(['alpha', 'beta']);
      expect(ids(await listAgents(db, 'team_a', { limit: 10, q: 'delta_' }))).to.deep.equal(['delta_1']);
      expect(ids(await listAgents(db, 'team_a', { limit: 10, q: 'delta%' }))).to.deep.equal(['delta%2']);
    });
  });
});
