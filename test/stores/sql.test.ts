/**
 * The dialect-neutral registry access (src/stores/sql.ts), the same tests on a real SQLite file and
 * a real PostgreSQL: what a feature's store is written against, so the two cannot drift apart.
 */
import { expect } from 'chai';
import path from 'node:path';
import { openRegistry, unsyncedTransaction } from '../../src/stores/sqlite.js';
import { openSharedStore, type SharedStore } from '../../src/stores/postgres.js';
import { numberedPlaceholders, postgresDatabase, sqliteDatabase, TransactionSpannedIo, type Database } from '../../src/stores/sql.js';
import { freshDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/processes.js';

const BUDGET_TABLE = {
  sqlite: 'CREATE TABLE budgets (id TEXT PRIMARY KEY, spent INTEGER NOT NULL, cap INTEGER NOT NULL)',
  postgres: 'CREATE TABLE budgets (id text PRIMARY KEY, spent bigint NOT NULL, cap bigint NOT NULL)',
};

/** Approve `amount` if it fits what is left: a read, a decision, a write, in one transaction. */
async function approve(db: Database, amount: number): Promise<boolean> {
  return db.transaction(async (sql) => {
    const row = await sql.get<{ spent: string | number; cap: string | number }>({
      sqlite: 'SELECT spent, cap FROM budgets WHERE id = ?',
      postgres: 'SELECT spent, cap FROM budgets WHERE id = $1 FOR UPDATE',
    }, ['b']);
    if (Number(row!.spent) + amount > Number(row!.cap)) return false;
    await sql.run('UPDATE budgets SET spent = spent + ? WHERE id = ?', [amount, 'b']);
    return true;
  });
}

describe('registry access in either dialect (src/stores/sql.ts)', function () {
  this.timeout(120_000);

  it('numbers ? placeholders for PostgreSQL, leaving quoted text, identifiers and comments alone', () => {
    expect(numberedPlaceholders(`SELECT '?', "a?b", x FROM t WHERE a = ? AND b = ? AND c = 'it''s?'`)).to.equal(
      `SELECT '?', "a?b", x FROM t WHERE a = $1 AND b = $2 AND c = 'it''s?'`,
    );
    expect(numberedPlaceholders(`SELECT x -- why?\nFROM t /* a? */ WHERE a = ?`)).to.equal(`SELECT x -- why?\nFROM t /* a? */ WHERE a = $1`);
  });

  const pools: SharedStore[] = [];
  after(async () => {
    await Promise.all(pools.map((p) => p.end()));
  });
  const dialects: [string, () => Promise<{ db: Database; another: () => Database }>][] = [
    ['SQLite', async () => {
      const db = sqliteDatabase(openRegistry(path.join(tempDir('sql'), 'registry.db')));
      return { db, another: () => db };
    }],
    ['PostgreSQL', async () => {
      const url = await freshDatabase('sql');
      const open = () => {
        const pool = openSharedStore(url, { max: 20 });
        pools.push(pool);
        return postgresDatabase(pool);
      };
      return { db: open(), another: open };
    }],
  ];

  for (const [name, setup] of dialects) {
    describe(name, () => {
      it('runs statements: rows changed, one row, all rows', async () => {
        const { db } = await setup();
        await db.run(BUDGET_TABLE);
        expect(await db.run('INSERT INTO budgets (id, spent, cap) VALUES (?, ?, ?), (?, ?, ?)', ['a', 1, 10, 'b', 2, 20])).to.equal(2);
        expect(await db.run('UPDATE budgets SET spent = spent + 1 WHERE cap > ?', [5])).to.equal(2);
        const one = await db.get<{ spent: number | string }>('SELECT spent FROM budgets WHERE id = ?', ['b']);
        expect(Number(one!.spent)).to.equal(3);
        expect(await db.get('SELECT spent FROM budgets WHERE id = ?', ['none'])).to.equal(undefined);
        expect((await db.all<{ id: string }>('SELECT id FROM budgets ORDER BY id')).map((r) => r.id)).to.deep.equal(['a', 'b']);
      });

      it('a transaction commits together, and a throw rolls all of it back', async () => {
        const { db } = await setup();
        await db.run(BUDGET_TABLE);
        await db.transaction(async (sql) => {
          await sql.run('INSERT INTO budgets (id, spent, cap) VALUES (?, 0, 1)', ['kept']);
        });
        let error: unknown;
        await db
          .transaction(async (sql) => {
            await sql.run('INSERT INTO budgets (id, spent, cap) VALUES (?, 0, 1)', ['dropped']);
            await sql.run('INSERT INTO budgets (id, spent, cap) VALUES (?, 0, 1)', ['kept']); // a duplicate key
          })
          .catch((err) => (error = err));
        expect(error).to.be.instanceOf(Error);
        expect((await db.all<{ id: string }>('SELECT id FROM budgets')).map((r) => r.id)).to.deep.equal(['kept']);
      });

      it('300 concurrent approvals against a budget that fits 50 approve exactly 50 (on PostgreSQL, from three pools)', async () => {
        const { db, another } = await setup();
        await db.run(BUDGET_TABLE);
        await db.run('INSERT INTO budgets (id, spent, cap) VALUES (?, 0, 50)', ['b']);
        const instances = [db, another(), another()];
        const decisions = await Promise.all(Array.from({ length: 300 }, (_, i) => approve(instances[i % 3]!, 1)));
        expect(decisions.filter(Boolean)).to.have.length(50);
        expect(Number((await db.get<{ spent: number }>('SELECT spent FROM budgets WHERE id = ?', ['b']))!.spent)).to.equal(50);
      });
    });
  }

  it("on SQLite, the group commit's transaction refuses to run inside another one on the connection", () => {
    const registry = openRegistry(path.join(tempDir('sql'), 'registry.db'));
    registry.exec('CREATE TABLE t (n INTEGER)');
    registry.exec('BEGIN');
    expect(() => unsyncedTransaction(registry, () => registry.prepare('INSERT INTO t VALUES (1)').run())).to.throw(/another transaction is open/);
    registry.exec('ROLLBACK');
    unsyncedTransaction(registry, () => registry.prepare('INSERT INTO t VALUES (1)').run());
    expect(registry.prepare('SELECT count(*) AS n FROM t').get()).to.deep.equal({ n: 1 });
  });

  it('on PostgreSQL, a bigint a number cannot hold exactly is refused, not rounded', async () => {
    const pool = openSharedStore(await freshDatabase('sql'));
    pools.push(pool);
    const db = postgresDatabase(pool);
    expect(await db.get('SELECT 9007199254740991::bigint AS n')).to.deep.equal({ n: 9007199254740991 });
    let error: unknown;
    await db.get('SELECT 9007199254740993::bigint AS n').catch((err) => (error = err));
    expect((error as Error | undefined)?.message).to.match(/past what a number holds exactly/);
    expect(await db.get(`SELECT '123456789012345678.000000000000000001'::numeric AS amount`)).to.deep.equal({ amount: '123456789012345678.000000000000000001' });
  });

  // A body that outlives its turn of the loop: waiting for I/O, or for the Database it is inside of.
  const outlivers: [string, (db: Database) => Promise<unknown>][] = [
    ['waits for I/O', () => new Promise((resolve) => setTimeout(resolve, 5))],
    ['calls the Database instead of its own sql (which waits for the turn it holds)', (db) => db.run('INSERT INTO budgets (id, spent, cap) VALUES (?, 0, 1)', ['waited-for-its-turn'])],
  ];
  for (const [what, wait] of outlivers) {
    it(`on SQLite, a transaction that ${what} is rolled back and refused, not left open or deadlocked`, async () => {
      const db = sqliteDatabase(openRegistry(path.join(tempDir('sql'), 'registry.db')));
      await db.run(BUDGET_TABLE.sqlite);
      let error: unknown;
      await db
        .transaction(async (sql) => {
          await sql.run('INSERT INTO budgets (id, spent, cap) VALUES (?, 0, 1)', ['x']);
          await wait(db);
        })
        .catch((err) => (error = err));
      expect(error).to.be.instanceOf(TransactionSpannedIo);
      await db.run('INSERT INTO budgets (id, spent, cap) VALUES (?, 0, 1)', ['after']);
      // Nothing of the transaction; a statement that waited for the turn ran once it was freed, outside it.
      const ids = (await db.all<{ id: string }>('SELECT id FROM budgets ORDER BY id')).map((r) => r.id);
      expect(ids.filter((id) => id !== 'waited-for-its-turn')).to.deep.equal(['after']);
    });
  }

});
