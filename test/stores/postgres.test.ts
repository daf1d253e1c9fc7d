/** The shared PostgreSQL store's migrations, on a real PostgreSQL (test/helpers/postgres.ts). */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { MigrationError, migrateSharedStore } from '../../src/stores/migrations.js';
import { inTransaction, openSharedStore, sharedStoreUnavailable, type SharedStore } from '../../src/stores/postgres.js';
import { freshDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/processes.js';

function writeMigrations(files: Record<string, string>): string {
  const dir = tempDir('pg-migrations');
  for (const [name, sql] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), sql);
  return dir;
}

describe('shared store (PostgreSQL) migrations', function () {
  this.timeout(120_000);
  const pools: SharedStore[] = [];
  const open = async (url?: string) => {
    const pool = openSharedStore(url ?? (await freshDatabase('migrations')));
    pools.push(pool);
    return pool;
  };
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });

  it('applies files in version order, records them, and applies nothing the second time', async () => {
    const store = await open();
    const dir = writeMigrations({
      '002_add_color.sql': 'ALTER TABLE widgets ADD COLUMN color text;',
      '001_widgets.sql': 'CREATE TABLE widgets (id integer PRIMARY KEY);',
      'README.md': 'not a migration',
    });
    expect(await migrateSharedStore(store, dir)).to.deep.equal(['001_widgets.sql', '002_add_color.sql']);
    expect(await migrateSharedStore(store, dir)).to.deep.equal([]);
    const recorded = (await store.query('SELECT version, name FROM schema_migrations ORDER BY version')).rows;
    expect(recorded).to.deep.equal([
      { version: 1, name: '001_widgets.sql' },
      { version: 2, name: '002_add_color.sql' },
    ]);
    await store.query("INSERT INTO widgets (id, color) VALUES (1, 'red')");
  });

  it('instances starting at once apply each migration once: the advisory lock serialises them', async () => {
    const url = await freshDatabase('migrations');
    // The second file would fail if applied twice (a column added twice), the third if run before it.
    const dir = writeMigrations({
      '001_widgets.sql': 'CREATE TABLE widgets (id integer PRIMARY KEY);',
      '002_color.sql': 'ALTER TABLE widgets ADD COLUMN color text;',
      '003_fill.sql': "INSERT INTO widgets (id, color) SELECT g, 'red' FROM generate_series(1, 1000) g;",
    });
    const instances = await Promise.all(Array.from({ length: 6 }, () => open(url)));
    const applied = await Promise.all(instances.map((store) => migrateSharedStore(store, dir)));
    expect(applied.flat().sort()).to.deep.equal(['001_widgets.sql', '002_color.sql', '003_fill.sql']);
    const [store] = instances;
    expect((await store!.query('SELECT count(*)::int AS n FROM widgets')).rows[0].n).to.equal(1000);
    expect((await store!.query('SELECT count(*)::int AS n FROM schema_migrations')).rows[0].n).to.equal(3);
  });

  it('a migration that waits for a table lock gives up after a while, so the queries behind it go on, and is tried again until it applies', async () => {
    const store = await open();
    await migrateSharedStore(store, writeMigrations({ '001_widgets.sql': 'CREATE TABLE widgets (id integer PRIMARY KEY);' }));
    await store.query('INSERT INTO widgets VALUES (1)');
    // A long transaction holds a lock on the table the next migration alters.
    const holder = await store.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM widgets FOR UPDATE');
    const migrating = migrateSharedStore(store, writeMigrations({ '001_widgets.sql': 'CREATE TABLE widgets (id integer PRIMARY KEY);', '002_color.sql': 'ALTER TABLE widgets ADD COLUMN color text;' }));
    // Meanwhile reads of the table are answered between the migration's tries: without the lock
    // timeout this read would queue behind the ALTER until the holder commits, which comes after it.
    await new Promise((r) => setTimeout(r, 2_500));
    const started = Date.now();
    expect((await store.query('SELECT count(*)::int AS n FROM widgets')).rows[0].n).to.equal(1);
    expect(Date.now() - started, 'a stall, not a slow hour').to.be.below(15_000);
    await holder.query('COMMIT');
    holder.release();
    expect(await migrating).to.deep.equal(['002_color.sql']);
    await store.query("UPDATE widgets SET color = 'red'");
  });

  it('stops with a clear message on a failing migration, which leaves nothing behind', async () => {
    const store = await open();
    const dir = writeMigrations({
      '001_ok.sql': 'CREATE TABLE a (id integer);',
      '002_broken.sql': 'CREATE TABLE b (id integer); CREATE TABLE oops (;',
    });
    let error: unknown;
    await migrateSharedStore(store, dir).catch((err) => (error = err));
    expect(error).to.be.instanceOf(MigrationError);
    expect((error as Error).message).to.match(/PostgreSQL migration 002_broken\.sql failed: syntax error/);
    // Transactional DDL: the failing file's first statement rolled back with it.
    expect((await store.query("SELECT to_regclass('b') AS b, to_regclass('a') AS a")).rows[0]).to.deep.equal({ b: null, a: 'a' });
    expect((await store.query('SELECT name FROM schema_migrations')).rows).to.deep.equal([{ name: '001_ok.sql' }]);
  });

  it('refuses an applied migration whose file was edited', async () => {
    const store = await open();
    const dir = writeMigrations({ '001_a.sql': 'CREATE TABLE a (id integer);' });
    await migrateSharedStore(store, dir);
    fs.writeFileSync(path.join(dir, '001_a.sql'), 'CREATE TABLE a (id integer, x text);');
    let error: unknown;
    await migrateSharedStore(store, dir).catch((err) => (error = err));
    expect(error).to.be.instanceOf(MigrationError);
    expect((error as Error).message).to.match(/001_a\.sql was changed after it was applied/);
  });

  it('a transaction commits what its function did, and rolls it all back when the function throws', async () => {
    const store = await open();
    await store.query('CREATE TABLE t (n integer)');
    await inTransaction(store, (c) => c.query('INSERT INTO t VALUES (1)'));
    await inTransaction(store, async (c) => {
      await c.query('INSERT INTO t VALUES (2)');
      throw new Error('changed my mind');
    }).catch(() => {});
    expect((await store.query('SELECT n FROM t')).rows).to.deep.equal([{ n: 1 }]);
  });
});

describe('shared store (PostgreSQL) connections', function () {
  this.timeout(30_000);

  it('a connection the server drops while it is checked out (a restart mid-transaction) fails the transaction, not the process, and is not reused', async () => {
    const pool = openSharedStore(await freshDatabase('dropped'));
    const admin = openSharedStore(await freshDatabase('dropped-admin'));
    try {
      let pid = 0;
      const outcome = await inTransaction(pool, async (client) => {
        pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        // Between two queries: the pool no longer listens on this connection, so its 'error'
        // event, with no listener, would end the process (mocha reports it as this test's failure).
        await new Promise((r) => setTimeout(r, 300));
        await client.query('SELECT 1');
        return 'committed';
      }).then(
        (value) => value,
        (err: unknown) => err,
      );
      expect(outcome).to.be.instanceOf(Error);
      expect(sharedStoreUnavailable(outcome), String(outcome)).to.equal(true);
      // The next transaction gets a live connection, not the dropped one.
      const next = await inTransaction(pool, async (client) => (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
      expect(next).to.not.equal(pid);
    } finally {
      await pool.end();
      await admin.end();
    }
  });
});
