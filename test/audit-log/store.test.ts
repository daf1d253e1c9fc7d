/**
 * The management audit log's store, the same tests on the SQLite registry and on PostgreSQL (each
 * migrated by its own schema folder), so the two dialects cannot drift apart.
 */
import { expect } from 'chai';
import { listChanges, recordChange, type NewChange } from '../../src/audit-log/repository.js';
import type { Database } from '../../src/stores/sql.js';
import { forEachDialect } from '../helpers/dialects.js';

const change = (action: string, resourceId: string, before: Record<string, unknown> | null, after: Record<string, unknown> | null): NewChange => ({
  keyId: 'key_1',
  keyName: 'alice',
  requestId: 'req-1',
  method: 'PATCH',
  route: '/policies/:id',
  action,
  resourceType: 'policy',
  resourceId,
  before,
  after,
});

describe('management audit log store, on SQLite and PostgreSQL', function () {
  this.timeout(120_000);
  forEachDialect('audit', (open) => {
    let db: Database;
    beforeEach(async () => {
      ({ db } = await open());
      await db.run('INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?), (?, ?, ?)', ['team_a', 'a', 1, 'team_b', 'b', 1]);
    });

    it('records changes with only the fields that changed, and lists them newest first, by filter and page', async () => {
      await db.transaction(async (sql) => {
        await recordChange(sql, 'team_a', change('policy.create', 'pol_1', null, { name: 'x', limit: '1' }), 1_000);
        await recordChange(sql, 'team_a', change('policy.update', 'pol_1', { name: 'x', limit: '1' }, { name: 'x', limit: '2' }), 2_000);
        await recordChange(sql, 'team_a', change('policy.create', 'pol_2', null, { name: 'y' }), 3_000);
        await recordChange(sql, 'team_b', change('policy.create', 'pol_9', null, { name: 'z' }), 4_000);
      });
      const all = await listChanges(db, 'team_a', { limit: 10 });
      expect(all.map((c) => [c.action, c.resourceId, c.at])).to.deep.equal([
        ['policy.create', 'pol_2', 3_000],
        ['policy.update', 'pol_1', 2_000],
        ['policy.create', 'pol_1', 1_000],
      ]);
      expect(all[1]!.changes).to.deep.equal({ limit: { before: '1', after: '2' } });
      expect(all[2]!.changes).to.deep.equal({ name: { before: null, after: 'x' }, limit: { before: null, after: '1' } });
      expect(typeof all[0]!.seq).to.equal('number');
      const ofPol1 = await listChanges(db, 'team_a', { limit: 10, resourceType: 'policy', resourceId: 'pol_1' });
      expect(ofPol1.map((c) => c.action)).to.deep.equal(['policy.update', 'policy.create']);
      const page2 = await listChanges(db, 'team_a', { limit: 1, beforeSeq: all[0]!.seq });
      expect(page2.map((c) => c.resourceId)).to.deep.equal(['pol_1']);
      expect(await listChanges(db, 'team_a', { limit: 10, keyId: 'key_other' })).to.deep.equal([]);
    });

    it('a change that fails records nothing: the record rolls back with it', async () => {
      await db
        .transaction(async (sql) => {
          await recordChange(sql, 'team_a', change('policy.delete', 'pol_1', { name: 'x' }, null));
          throw new Error('the change failed');
        })
        .catch(() => {});
      expect(await listChanges(db, 'team_a', { limit: 10 })).to.deep.equal([]);
    });

    it('is append-only: the store refuses to change or delete a record', async () => {
      await db.transaction((sql) => recordChange(sql, 'team_a', change('policy.create', 'pol_1', null, { name: 'x' })));
      for (const statement of ["UPDATE management_audit SET action = 'forged'", 'DELETE FROM management_audit']) {
        let error: unknown;
        await db.run(statement).catch((err) => (error = err));
        expect((error as Error | undefined)?.message, statement).to.match(/append-only/);
      }
      expect((await listChanges(db, 'team_a', { limit: 10 })).map((c) => c.action)).to.deep.equal(['policy.create']);
    });
  });
});
