/** The ingest log's (team, id) index: level-0 tables, runs written by its worker, days; a real SQLite file of its own, days given as times. */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { runFolder } from '../../src/ingest/dedup/index.js';
import { IngestLog, type ContentPrint } from '../../src/ingest/log.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { migrateRegistry } from '../../src/stores/migrations.js';
import { openRegistry, type Registry } from '../../src/stores/sqlite.js';
import { tempDir } from '../helpers/processes.js';
import { sdkId } from '../helpers/common.js';

const DAY = 86_400_000;
const NOON = Date.UTC(2026, 10, 22, 12);

describe('ingest log (team, id) index', () => {
  let db: Registry;
  let logs: IngestLog[];
  /** A log as a process opens it (the one before it stopped, as at a restart). */
  const open = (level0Keys?: number) => {
    logs.at(-1)?.stop();
    const log = new IngestLog(db, 7, { level0Keys });
    logs.push(log);
    return log;
  };
  const claim = (log: IngestLog, team: string, ids: string[], at: number, prints?: ContentPrint[]) => db.transaction(() => log.claim(team, ids, at, prints))();
  const level0Tables = () =>
    (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ingest_claims_%' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
  const runFiles = () => fs.readdirSync(runFolder(db)).sort();
  const listed = () => (db.prepare('SELECT file FROM ingest_runs ORDER BY file').all() as { file: string }[]).map((r) => r.file);
  const sdkIds = (n: number) => Array.from({ length: n }, () => sdkId());
  const printOf = (n: number): ContentPrint => ({ fp: String(n), txHash: null });

  beforeEach(() => {
    db = openRegistry(tempDir('dedup-index'));
    migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'));
    logs = [];
  });
  afterEach(() => {
    for (const log of logs) log.stop();
    db.close();
  });

  it('finds an id claimed on any day of the window, per team; a repeat in one claim is new once', async () => {
    const log = open();
    expect(claim(log, 'team-a', ['x', 'y'], NOON - 7 * DAY)).to.deep.equal([true, true]);
    expect(claim(log, 'team-a', ['z'], NOON - 3 * DAY)).to.deep.equal([true]);
    expect(claim(log, 'team-a', ['x', 'z', 'n', 'n', 'srv_1', 'srv_1'], NOON)).to.deep.equal([false, false, true, false, true, true]);
    expect(claim(log, 'team-b', ['x', 'z'], NOON)).to.deep.equal([true, true]);
    expect(claim(log, 'team-a', ['n'], NOON + 1000)).to.deep.equal([false]);
    // Once the older days are runs, the same answers.
    await log.settled();
    expect(log.index.describe().runs.map((r) => r.day)).to.deep.equal(['20261115', '20261119']);
    expect(claim(log, 'team-a', ['x', 'y', 'z', 'n', 'm'], NOON + 2000)).to.deep.equal([false, false, false, false, true]);
    expect(claim(log, 'team-c', ['x'], NOON + 2000)).to.deep.equal([true]);
  });

  it('drops whole days that leave the window: an id older than the window is new again, its tables and files gone', async () => {
    const log = open();
    claim(log, 'team-a', ['old'], NOON - 9 * DAY);
    claim(log, 'team-a', ['older-run'], NOON - 8 * DAY);
    await log.settled();
    claim(log, 'team-a', ['kept'], NOON - 7 * DAY);
    expect(claim(log, 'team-a', ['old', 'older-run', 'kept'], NOON)).to.deep.equal([true, true, false]);
    await log.settled();
    const held = log.index.describe();
    expect(held.runs.map((r) => r.day)).to.deep.equal(['20261115']);
    expect(held.level0.map((g) => g.day)).to.deep.equal(['20261122']);
    expect(level0Tables()).to.have.length(1);
    expect(runFiles()).to.deep.equal(listed()).and.to.have.length(1);
  });

  it('a new process finds what an earlier one claimed: in level 0, in runs, on every day of the window', async () => {
    claim(open(), 'team-a', ['p1'], NOON - 6 * DAY);
    claim(open(), 'team-a', ['p2'], NOON - 1 * DAY);
    const third = open();
    claim(third, 'team-a', ['p3'], NOON - 60_000);
    await third.settled();
    const restarted = open();
    expect(claim(restarted, 'team-a', ['p1', 'p2', 'p3', 'p4'], NOON)).to.deep.equal([false, false, false, true]);
    expect(claim(open(), 'team-a', ['p1', 'p2', 'p3', 'p4', 'p5'], NOON)).to.deep.equal([false, false, false, false, true]);
  });

  it('writes level 0 out as runs and merges four of a level into the next; every id still found, new ones probed only on a filter\'s maybe', async () => {
    const log = open(500);
    const ids = sdkIds(12_000);
    for (let i = 0; i < ids.length; i += 200) {
      expect(claim(log, 'team-a', ids.slice(i, i + 200), NOON, ids.slice(i, i + 200).map((_, k) => printOf(i + k))).every((s) => s === true)).to.equal(true);
      if (i % 2000 === 0) await log.settled();
    }
    await log.settled();
    const held = log.index.describe();
    expect(held.runs.some((r) => r.level >= 2), `levels ${held.runs.map((r) => r.level)}`).to.equal(true);
    expect(held.runs.length).to.be.below(12);
    expect(held.runs.reduce((n, r) => n + r.rows, 0) + held.level0.reduce((n, g) => n + g.keys, 0)).to.equal(ids.length);
    expect(runFiles()).to.deep.equal(listed());
    // Every id a duplicate with its own print (a different print: a conflict naming content).
    const before = log.index.probes;
    const again = claim(log, 'team-a', ids, NOON + 1000, ids.map((_, k) => printOf(k)));
    expect(again.every((s) => s === false)).to.equal(true);
    const other = claim(log, 'team-a', ids.slice(0, 3), NOON + 1000, [printOf(1), printOf(0), printOf(2)]);
    expect(other.map((o) => typeof o === 'object')).to.deep.equal([true, true, false]);
    // New ids: probed only where a filter says maybe (about 0.3% per run).
    const probed = log.index.probes;
    const fresh = sdkIds(5000);
    expect(claim(log, 'team-a', fresh, NOON + 2000).every((s) => s === true)).to.equal(true);
    expect(log.index.probes - probed).to.be.below(fresh.length * 0.05);
    expect(probed - before).to.be.at.least(ids.length - held.level0.reduce((n, g) => n + g.keys, 0));
    // And after a restart, from the files alone.
    const restarted = open(500);
    const after = claim(restarted, 'team-a', [...ids.slice(0, 1000), ...fresh.slice(0, 10), 'brand-new'], NOON + 3000);
    expect(after.slice(0, 1010).every((s) => s === false)).to.equal(true);
    expect(after[1010]).to.equal(true);
  });

  it('a rolled-back claim leaves the id unclaimed, also when it froze level 0', async () => {
    const log = open(3);
    claim(log, 'team-a', ['a1', 'a2'], NOON);
    const end = log.endPos;
    expect(() =>
      db.transaction(() => {
        log.claim('team-a', ['r1', 'r2'], NOON);
        log.claim('team-a', ['r3'], NOON);
        throw new Error('disk full');
      })(),
    ).to.throw('disk full');
    log.rolledBack(end);
    await log.settled();
    expect(claim(log, 'team-a', ['r1', 'r2', 'r3', 'a1', 'a2'], NOON)).to.deep.equal([true, true, true, false, false]);
    await log.settled();
    expect(claim(open(3), 'team-a', ['r1', 'r2', 'r3', 'a1', 'a2', 'r4'], NOON)).to.deep.equal([false, false, false, false, false, true]);
  });

  it('after a crash: a run file the manifest does not list is removed, and its level-0 table written again', async () => {
    const log = open(100);
    const ids = sdkIds(150);
    claim(log, 'team-a', ids, NOON);
    claim(log, 'team-a', ['next'], NOON);
    // Killed while the worker wrote the run of the frozen table: a partial file, not listed.
    log.stop();
    fs.writeFileSync(path.join(runFolder(db), 'run-00000007.db'), 'half a run');
    expect(level0Tables()).to.have.length(2);
    const restarted = open(100);
    expect(runFiles()).to.deep.equal([]);
    expect(claim(restarted, 'team-a', [...ids, 'next', 'new'], NOON).slice(-3)).to.deep.equal([false, false, true]);
    await restarted.settled();
    expect(listed()).to.have.length(1);
    expect(runFiles()).to.deep.equal(listed());
    expect(claim(restarted, 'team-a', ids, NOON).every((s) => s === false)).to.equal(true);
  });

  it('refuses to start when a listed run file is missing: its ids would be claimed twice', () => {
    const log = open(2);
    claim(log, 'team-a', ['a', 'b'], NOON);
    log.stop();
    db.prepare("INSERT INTO ingest_runs (file, day, level, rows) VALUES ('run-00000042.db', '20261122', 0, 2)").run();
    expect(() => open()).to.throw(/run-00000042.db .* missing/);
  });

  it('reads the day tables of the former B-tree index at once, then rewrites each as a run and drops it', async () => {
    db.exec("CREATE TABLE ingest_ids_20261120 (team_id TEXT NOT NULL, id TEXT NOT NULL, record_fp INTEGER, PRIMARY KEY (team_id, id)) WITHOUT ROWID");
    db.exec("CREATE TABLE ingest_ids_20261101 (team_id TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (team_id, id)) WITHOUT ROWID");
    const insert = db.prepare('INSERT INTO ingest_ids_20261120 VALUES (?, ?, ?)');
    const ids = sdkIds(300);
    ids.forEach((id, i) => insert.run('team-a', id, i));
    db.prepare("INSERT INTO ingest_ids_20261101 VALUES ('team-a', 'gone')").run();
    const log = open();
    expect(claim(log, 'team-a', [ids[0]!, ids[1]!, 'gone', 'new'], NOON, [printOf(0), printOf(7), printOf(2), printOf(3)])).to.deep.equal([
      false,
      { conflict: ['agent_id'] },
      true,
      true,
    ]);
    await log.settled();
    expect((db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name LIKE 'ingest_ids_%'").get() as { n: number }).n).to.equal(0);
    expect(log.index.describe().runs).to.deep.include({ file: listed()[0], day: '20261120', level: 0, rows: 300 });
    expect(claim(open(), 'team-a', [ids[299]!, ids[1]!], NOON, [printOf(299), printOf(7)])).to.deep.equal([false, { conflict: ['agent_id'] }]);
  });
});
