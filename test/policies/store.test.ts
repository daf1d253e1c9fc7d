/** The policies store, the same tests on SQLite and on PostgreSQL. */
import { expect } from 'chai';
import {
  activePolicyRows,
  countActivePolicies,
  createPolicies,
  createPolicy,
  deletePolicy,
  findPolicy,
  listPolicies,
  TooManyActivePolicies,
  updatePolicy,
  type PolicyInput,
} from '../../src/policies/repository.js';
import { PolicyRevisions } from '../../src/policies/revisions.js';
import { forEachDialect } from '../helpers/dialects.js';

const revisions = new PolicyRevisions();

const input = (name: string, over: Partial<PolicyInput> = {}): PolicyInput => ({
  name,
  agents: [],
  limits: [{ kind: 'daily', amount: '10.000000000000000001' }],
  action: 'flag',
  active: true,
  timezone: null,
  ...over,
});

describe('policies store, on SQLite and PostgreSQL', function () {
  this.timeout(120_000);
  forEachDialect('policies', (open) => {
    let team = 0;
    /** A store with a team of a name no other test uses: policyRevisions is kept per team id, process-wide. */
    const seed = async () => {
      const store = await open();
      const teamId = `team_pol${++team}_${Date.now()}`;
      await store.db.run('INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)', [teamId, teamId, 1]);
      return { ...store, teamId };
    };

    it('creates, finds, changes (agents replaced whole) and deletes a policy, its amounts as sent', async () => {
      const { db, teamId } = await seed();
      const created = await db.transaction((sql) => createPolicy(sql, teamId, input('daily cap', { agents: ['b-bot', 'a-bot'], timezone: 'Europe/Paris' }), revisions));
      expect(created).to.include({ name: 'daily cap', action: 'flag', active: true, timezone: 'Europe/Paris' });
      expect(created.agents).to.deep.equal(['a-bot', 'b-bot']);
      expect(created.limits).to.deep.equal([{ kind: 'daily', amount: '10.000000000000000001' }]);
      expect(await findPolicy(db, teamId, created.id)).to.deep.equal(created);
      expect(await findPolicy(db, 'team_other', created.id)).to.equal(undefined);

      const changed = await db.transaction((sql) => updatePolicy(sql, teamId, created.id, { agents: ['c-bot'], action: 'block' }, revisions));
      expect(changed).to.include({ name: 'daily cap', action: 'block' });
      expect(changed!.agents).to.deep.equal(['c-bot']);
      expect(await db.transaction((sql) => updatePolicy(sql, teamId, 'pol_none', { name: 'x' }, revisions))).to.equal(undefined);

      expect(await deletePolicy(db, teamId, created.id, revisions)).to.equal(true);
      expect(await deletePolicy(db, teamId, created.id, revisions)).to.equal(false);
      expect(await db.get('SELECT count(*) AS n FROM policy_agents WHERE policy_id = ?', [created.id])).to.satisfy((r: { n: unknown }) => Number(r.n) === 0);
    });

    it('lists newest first by page, by agent (naming it or covering all) and by active; evaluation reads the active ones oldest first with their agents', async () => {
      const { db, teamId } = await seed();
      const made = [];
      const variants: Partial<PolicyInput>[] = [{}, { agents: ['x-bot'] }, { agents: ['y-bot'] }, { active: false }];
      for (const [i, over] of variants.entries()) {
        made.push(await db.transaction((sql) => createPolicy(sql, teamId, input(`p${i}`, over), revisions)));
        await new Promise((resolve) => setTimeout(resolve, 3)); // created_at apart: the order is by it
      }
      const ids = (list: { id: string }[]) => list.map((p) => p.id);
      const all = await listPolicies(db, teamId, { limit: 10 });
      expect(all).to.have.length(4);
      const first = await listPolicies(db, teamId, { limit: 3 });
      const rest = await listPolicies(db, teamId, { limit: 3, after: { createdAt: first.at(-1)!.createdAt, id: first.at(-1)!.id } });
      expect([...ids(first), ...ids(rest)]).to.deep.equal(ids(all));
      expect(ids(await listPolicies(db, teamId, { limit: 10, agent: 'x-bot' })).sort()).to.deep.equal([made[0]!.id, made[1]!.id, made[3]!.id].sort());
      expect(ids(await listPolicies(db, teamId, { limit: 10, active: false }))).to.deep.equal([made[3]!.id]);
      expect(await countActivePolicies(db, teamId)).to.equal(3);

      const rows = await activePolicyRows(db, teamId);
      expect(rows.map((r) => r.name)).to.deep.equal(['p0', 'p1', 'p2']);
      expect(rows.find((r) => r.name === 'p1')!.agents).to.deep.equal(['x-bot']);
      expect(JSON.parse(rows[0]!.limits)).to.deep.equal([{ kind: 'daily', amount: '10.000000000000000001' }]);
    });

    it('the bound on active policies holds when instances create at once; the revision rises once each change commits, not for a rolled-back one', async () => {
      const { db, another, teamId } = await seed();
      const before = revisions.of(teamId);
      const instances = [db, another(), another(), another()];
      const outcomes = await Promise.allSettled(instances.map((i, n) => i.transaction((sql) => createPolicy(sql, teamId, input(`race ${n}`), revisions, 2))));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(2);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).to.be.instanceOf(TooManyActivePolicies);
      expect(await countActivePolicies(db, teamId)).to.equal(2);
      expect(revisions.of(teamId)).to.equal(before + 2);

      await db
        .transaction(async (sql) => {
          await createPolicy(sql, teamId, input('rolled back', { active: false }), revisions);
          throw new Error('no');
        })
        .catch(() => undefined);
      expect(revisions.of(teamId)).to.equal(before + 2);
      expect(await listPolicies(db, teamId, { limit: 10, active: false })).to.deep.equal([]);
    });

    it('several policies in one transaction: each stored as one at a time would be, in order, the revision raised once, the bound on active ones held', async () => {
      const { db, teamId } = await seed();
      const before = revisions.of(teamId);
      const ids = await db.transaction((sql) => createPolicies(sql, teamId, [input('first', { agents: ['a-bot'] }), input('second', { action: 'block' }), input('third', { active: false })], revisions));
      expect(ids).to.have.length(3);
      expect(revisions.of(teamId)).to.equal(before + 1);
      const stored = await Promise.all(ids.map((id) => findPolicy(db, teamId, id)));
      expect(stored.map((p) => [p?.name, p?.action, p?.active, p?.agents])).to.deep.equal([
        ['first', 'flag', true, ['a-bot']],
        ['second', 'block', true, []],
        ['third', 'flag', false, []],
      ]);
      expect((await activePolicyRows(db, teamId)).map((r) => r.id)).to.have.members(ids.slice(0, 2));
      // Over the bound: nothing of the batch is kept, and the revision does not rise.
      const over = db.transaction((sql) => createPolicies(sql, teamId, [input('fourth'), input('fifth')], revisions, 3));
      await over.then(
        () => expect.fail('created past the bound'),
        (e: unknown) => expect(e).to.be.instanceOf(TooManyActivePolicies),
      );
      expect(await countActivePolicies(db, teamId)).to.equal(2);
      expect(revisions.of(teamId)).to.equal(before + 1);
    });
  });
});
