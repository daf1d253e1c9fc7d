/** The ingest log's (team, id) index over days: a real SQLite file of its own, days given as times. */
import { expect } from 'chai';
import path from 'node:path';
import { IngestLog } from '../../src/ingest/log.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { migrateRegistry } from '../../src/stores/migrations.js';
import { openRegistry, type Registry } from '../../src/stores/sqlite.js';
import { tempDir } from '../helpers/processes.js';

const DAY = 86_400_000;
const NOON = Date.UTC(2026, 10, 22, 12);

describe('ingest log (team, id) index', () => {
  let db: Registry;
  const claim = (log: IngestLog, team: string, ids: string[], at: number) => db.transaction(() => log.claim(team, ids, at))();
  const tables = () =>
    (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ingest_ids_%' ORDER BY name").all() as { name: string }[]).map((r) => r.name);

  beforeEach(() => {
    db = openRegistry(tempDir('dedup-index'));
    migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'));
  });
  afterEach(() => db.close());

  it('finds an id claimed on any day of the window, per team; a repeat in one claim is new once', () => {
    const log = new IngestLog(db, 7);
    expect(claim(log, 'team-a', ['x', 'y'], NOON - 7 * DAY)).to.deep.equal([true, true]);
    expect(claim(log, 'team-a', ['z'], NOON - 3 * DAY)).to.deep.equal([true]);
    expect(claim(log, 'team-a', ['x', 'z', 'n', 'n', 'srv_1', 'srv_1'], NOON)).to.deep.equal([false, false, true, false, true, true]);
    expect(claim(log, 'team-b', ['x', 'z'], NOON)).to.deep.equal([true, true]);
    expect(claim(log, 'team-a', ['n'], NOON + 1000)).to.deep.equal([false]);
  });

  it('drops whole days that leave the window: an id older than the window is new again', () => {
    const log = new IngestLog(db, 7);
    claim(log, 'team-a', ['old'], NOON - 8 * DAY);
    claim(log, 'team-a', ['kept'], NOON - 7 * DAY);
    expect(tables()).to.have.length(2);
    expect(claim(log, 'team-a', ['old', 'kept'], NOON)).to.deep.equal([true, false]);
    expect(tables()).to.deep.equal(['ingest_ids_20261115', 'ingest_ids_20261122']);
  });

  it('a new process finds what an earlier one claimed, on every day of the window', () => {
    claim(new IngestLog(db, 7), 'team-a', ['p1'], NOON - 6 * DAY);
    claim(new IngestLog(db, 7), 'team-a', ['p2'], NOON - 1 * DAY);
    claim(new IngestLog(db, 7), 'team-a', ['p3'], NOON - 60_000);
    const restarted = new IngestLog(db, 7);
    expect(claim(restarted, 'team-a', ['p1', 'p2', 'p3', 'p4'], NOON)).to.deep.equal([false, false, false, true]);
  });

  it('with every day\'s filter built (after a start), still finds every id, and looks up only the maybes', async () => {
    const days = [6, 4, 2, 1].map((d) => NOON - d * DAY);
    const ids = days.map((_, d) => Array.from({ length: 3000 }, (_, i) => `d${d}-${i}`));
    days.forEach((at, d) => claim(new IngestLog(db, 7), 'team-a', ids[d]!, at));
    const restarted = new IngestLog(db, 7);
    expect(claim(restarted, 'team-a', ['first'], NOON)).to.deep.equal([true]);
    await restarted.filtersReady();
    const all = ids.flat();
    const fresh = Array.from({ length: 3000 }, (_, i) => `new-${i}`);
    const before = restarted.olderLookups;
    const seen = claim(restarted, 'team-a', [...all, ...fresh], NOON);
    expect(seen.slice(0, all.length).every((s) => s === false), 'every old id is a duplicate').to.equal(true);
    expect(seen.slice(all.length).every((s) => s === true), 'every new id is new').to.equal(true);
    // What reached SQLite: every old id (the filters hold them) and a few false positives of the new ones.
    const looked = restarted.olderLookups - before;
    expect(looked).to.be.at.least(all.length);
    expect(looked).to.be.below(all.length + fresh.length * 0.05);
    expect(claim(restarted, 'team-b', ['d0-1'], NOON)).to.deep.equal([true]);
    restarted.stop();
  });

  it('a rolled-back claim leaves the id unclaimed', () => {
    const log = new IngestLog(db, 7);
    const end = log.endPos;
    expect(() =>
      db.transaction(() => {
        log.claim('team-a', ['r1'], NOON);
        throw new Error('disk full');
      })(),
    ).to.throw('disk full');
    log.rolledBack(end);
    expect(claim(log, 'team-a', ['r1'], NOON)).to.deep.equal([true]);
  });
});
