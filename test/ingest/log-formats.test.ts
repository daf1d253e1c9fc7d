/**
 * The log's two formats (issue 33): chunks are RowBinary since, TSV lines before. A log written by
 * the release before (TSV chunks, a block recorded but not loaded) is upgraded in place and loads
 * whole and once beside the RowBinary chunks that follow; a block never mixes formats; a block cut
 * inside a RowBinary chunk takes its rows. Each test runs a loader of its own on a registry file of
 * its own (as at a start), over the shared embedded engine.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { Freshness } from '../../src/ingest/freshness.js';
import { DamagedChunkError, recordsOf, setAsideInside, type StoredChunk } from '../../src/ingest/blocks.js';
import { Loader } from '../../src/ingest/local-loader.js';
import { IngestLog } from '../../src/ingest/log.js';
import { recordToRow, type EventRow } from '../../src/ingest/records.js';
import { rowBinaryOf } from '../../src/ingest/rowbinary.js';
import { rowToTsv } from '../../src/ingest/tsv.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { migrateRegistry } from '../../src/stores/migrations.js';
import { performNow } from '../../src/stores/sql.js';
import { openRegistry, type Registry } from '../../src/stores/sqlite.js';
import { testEnv, testWalSyncer } from '../helpers/context.js';
import { tempDir } from '../helpers/processes.js';
import { event } from './fixtures.js';

/** The registry migration that made the log's chunks RowBinary. */
const FORMATS_MIGRATION = 21;

function rowsFor(teamId: string, from: number, n: number): EventRow[] {
  return Array.from({ length: n }, (_, i) => {
    const made = recordToRow(event({ id: `f-${from + i}`, amount: `${from + i}.25`, agent_id: `agent-${i % 3}` }), testEnv().schemas, teamId, 'events', Date.now());
    if (!made.ok) throw new Error(JSON.stringify(made.errors));
    made.row.ingest_seq = Date.now() * 1000 + from + i;
    return made.row;
  });
}

const tsvOf = (rows: readonly EventRow[], first: number) => Buffer.from(rows.map((row, i) => rowToTsv(row, first + i)).join(''));
const binaryOf = (rows: readonly EventRow[], first: number) => Buffer.from(rowBinaryOf(rows, first));

/** What ClickHouse holds of a team: rows, distinct ids, positions in order, and whether every rollup counts the same. */
async function stored(teamId: string): Promise<{ n: number; ids: number; positions: number[]; spend: string; rollupsEqual: boolean }> {
  const [row] = await testEnv().events.query<{ n: string; ids: string; positions: string; spend: string; minutely: string; daily: string }>(
    `SELECT toString(count()) AS n, toString(uniqExact(id)) AS ids, toString(arraySort(groupArray(log_pos))) AS positions,
            toString(sum(toDecimal256(amount, 18))) AS spend,
            (SELECT toString(sum(events)) FROM spend_minutely WHERE team_id = {t:String}) AS minutely,
            (SELECT toString(sum(events)) FROM spend_daily_by WHERE team_id = {t:String} AND dimension = 'agent') AS daily
       FROM events WHERE team_id = {t:String}`,
    { t: teamId },
  );
  return { n: Number(row!.n), ids: Number(row!.ids), positions: JSON.parse(row!.positions) as number[], spend: row!.spend, rollupsEqual: row!.minutely === row!.n && row!.daily === row!.n };
}

describe('the ingest log\'s formats: RowBinary, and TSV chunks of before', function () {
  this.timeout(60_000);
  const opened: { registry: Registry; log?: IngestLog; loader?: Loader }[] = [];
  afterEach(async () => {
    for (const { registry, log, loader } of opened.splice(0)) {
      await loader?.stop();
      log?.stop();
      registry.close();
    }
  });

  /** A registry migrated up to (not including) migration `until`, or fully. */
  function registryAt(until = Infinity): Registry {
    const registry = openRegistry(tempDir('log-formats'));
    const schema = path.join(SCHEMA_DIR, 'sqlite');
    const dir = tempDir('log-formats-schema');
    for (const file of fs.readdirSync(schema)) if (Number(file.slice(0, 3)) < until) fs.copyFileSync(path.join(schema, file), path.join(dir, file));
    migrateRegistry(registry, dir);
    opened.push({ registry });
    return registry;
  }

  /** Starts a loader on the registry, as the service does at a start. */
  function startLoader(registry: Registry, blockRows = 1_000): { loader: Loader; freshness: Freshness } {
    const { deps } = testEnv();
    // The asset backfill is the shared engine's business, not this log's: marked done.
    registry.prepare("INSERT OR IGNORE INTO rollup_backfills (name, done_at, legacy_until) VALUES ('asset', 0, 0)").run();
    const { loadedPos, unloaded } = Loader.state(registry);
    const freshness = new Freshness(loadedPos, unloaded);
    const loader = new Loader(registry, testWalSyncer(registry), deps.loaderEvents, freshness, { blockRows, intervalMs: 50 }, deps.logger);
    opened.at(-1)!.loader = loader;
    loader.start();
    return { loader, freshness };
  }

  it('a log of the release before (TSV chunks, one block recorded) upgraded in place loads every record once beside new RowBinary chunks', async () => {
    const team = `formats-${process.pid}-${Date.now()}`;
    const registry = registryAt(FORMATS_MIGRATION);
    // What the release before wrote: chunks of TSV lines, and a block recorded before a kill -9.
    const append = registry.prepare('INSERT INTO ingest_log (first_pos, last_pos, team_id, rows, bytes, committed_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)');
    for (const [first, n] of [[1, 5], [6, 5], [11, 5]] as const) {
      const body = tsvOf(rowsFor(team, first, n), first);
      append.run(first, first + n - 1, team, n, body.length, Date.now(), body);
    }
    registry.prepare('INSERT INTO ingest_blocks (first_pos, last_pos) VALUES (1, 10)').run();

    migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
    expect(registry.prepare('SELECT format FROM ingest_blocks').all()).to.deep.equal([{ format: 'tsv' }]);
    const log = new IngestLog(registry, 7);
    opened.at(-1)!.log = log;
    expect(log.endPos).to.equal(16);
    const { freshness } = startLoader(registry);
    // The group commit's append, after the upgrade: RowBinary. Then a TSV chunk again (written
    // here by hand) and RowBinary: every change of format starts a block.
    const chunks = registry.transaction(() => [
      ...performNow(registry, log.appending(team, rowsFor(team, 16, 5), Date.now())),
      log.append(team, 'tsv', tsvOf(rowsFor(team, 21, 5), 21), 5, Date.now()),
      ...performNow(registry, log.appending(team, rowsFor(team, 26, 5), Date.now())),
    ])();
    expect(chunks.map((c) => [c.firstPos, c.format])).to.deep.equal([[16, 'rowbinary2'], [21, 'tsv'], [26, 'rowbinary2']]);
    freshness.committed(chunks);
    expect(await freshness.waitFor(30, 20_000), 'loaded').to.equal(true);

    const found = await stored(team);
    // 1.25 + 2.25 + ... + 30.25
    expect(found).to.deep.equal({ n: 30, ids: 30, positions: Array.from({ length: 30 }, (_, i) => i + 1), spend: '472.5', rollupsEqual: true });
    expect(registry.prepare('SELECT count(*) AS n FROM ingest_log').get()).to.deep.equal({ n: 0 });
    expect(registry.prepare('SELECT count(*) AS n FROM ingest_rejects').get()).to.deep.equal({ n: 0 });
  });

  /** A registry of the current schema with its log, for a team of the test's own. */
  function freshLog(label: string): { team: string; registry: Registry; log: IngestLog } {
    const registry = registryAt();
    const log = new IngestLog(registry, 7);
    opened.at(-1)!.log = log;
    return { team: `${label}-${process.pid}-${Date.now()}`, registry, log };
  }

  it('blocks recorded inside a RowBinary chunk (a bisection cut short by a kill) load its rows once', async () => {
    const { team, registry, log } = freshLog('cut');
    const rows = rowsFor(team, 1, 7);
    registry.transaction(() => {
      performNow(registry, log.appending(team, rows, Date.now()));
      const record = registry.prepare("INSERT INTO ingest_blocks (first_pos, last_pos, format) VALUES (?, ?, 'rowbinary2')");
      record.run(1, 2);
      record.run(3, 5);
      record.run(6, 7);
    })();
    const { freshness } = startLoader(registry);
    expect(await freshness.waitFor(7, 20_000), 'loaded').to.equal(true);
    expect(await stored(team)).to.deep.equal({ n: 7, ids: 7, positions: [1, 2, 3, 4, 5, 6, 7], spend: '29.75', rollupsEqual: true });
    expect(registry.prepare('SELECT count(*) AS n FROM ingest_blocks').get()).to.deep.equal({ n: 0 });
  });

  it('a new block is taken from the bodies kept since their commit; past their bound, and after a restart, from the log', async () => {
    const { team, registry, log } = freshLog('kept');
    const append = (from: number) => registry.transaction(() => performNow(registry, log.appending(team, rowsFor(team, from, 4), Date.now())))();
    const written = [append(1), append(5), append(9)].flat();
    expect(written.map((c) => c.body?.length)).to.deep.equal(written.map((c) => c.bytes));
    // Room for two of the three: the third is read back from the log when its block is loaded.
    const freshness = new Freshness(0, [], written[0]!.bytes + written[1]!.bytes);
    freshness.committed(written);
    expect(written.map((c) => c.body !== undefined)).to.deep.equal([true, true, false]);
    expect(freshness.nextChunks(1_000)).to.deep.equal(written);
    freshness.loaded(4);
    expect(written[0]!.body, 'let go once loaded').to.equal(undefined);
    // A restart: the chunks are summaries read from the log, without bodies.
    expect(Loader.state(registry).unloaded.every((c) => c.body === undefined && c.format === 'rowbinary2')).to.equal(true);

    // Loaded through a loader of this registry: what is kept and what is read back are the same bytes.
    const { freshness: loading } = startLoader(registry);
    const more = [append(13), append(17)].flat();
    loading.committed(more);
    expect(await loading.waitFor(20, 20_000), 'loaded').to.equal(true);
    expect(await stored(team)).to.deep.include({ n: 20, ids: 20, positions: Array.from({ length: 20 }, (_, i) => i + 1), rollupsEqual: true });
  });

  describe('cutting a chunk between its records', () => {
    const team = 'team-cut';
    const rows = () => rowsFor(team, 1, 5);
    const chunkOf = (format: 'tsv' | 'rowbinary2', body: Buffer): StoredChunk => ({ firstPos: 11, lastPos: 15, teamId: team, format, body });

    it('gives each wanted record\'s bytes, in either format', () => {
      const made = rows();
      for (const [format, whole, alone] of [
        ['tsv', tsvOf(made, 11), (i: number) => tsvOf([made[i]!], 11 + i)],
        ['rowbinary2', binaryOf(made, 11), (i: number) => binaryOf([made[i]!], 11 + i)],
      ] as const) {
        const parts = recordsOf(chunkOf(format, whole), (pos) => pos === 12 || pos === 15);
        expect(parts.map((p) => p.toString('hex')), format).to.deep.equal([alone(1), alone(4)].map((b) => b.toString('hex')));
        expect(setAsideInside(chunkOf(format, whole), 13, 13), format).to.deep.include({ teamId: team, id: 'f-3', format, rows: 1 });
        expect(setAsideInside(chunkOf(format, whole), 13, 14), format).to.equal(undefined);
      }
    });

    it('refuses a chunk whose bytes do not hold its records, and sets such a chunk aside whole', () => {
      const made = rows();
      const cut = binaryOf(made, 11).subarray(0, -3);
      expect(() => recordsOf(chunkOf('rowbinary2', cut), () => true)).to.throw(DamagedChunkError);
      expect(() => recordsOf(chunkOf('rowbinary2', binaryOf(made.slice(0, 4), 11)), () => true)).to.throw(DamagedChunkError, /holds 4 records, not 5/);
      expect(() => recordsOf(chunkOf('tsv', tsvOf(made.slice(0, 4), 11)), () => true)).to.throw(DamagedChunkError, /holds 4 records, not 5/);
      expect(setAsideInside(chunkOf('rowbinary2', cut), 11, 15)).to.deep.equal({ teamId: team, id: '', format: 'rowbinary2', bytes: cut, rows: 5 });
    });
  });
});
