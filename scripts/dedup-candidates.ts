/**
 * Candidate structures for the dedup index (issue 33), measured side by side by
 * `npm run bench:dedup -- --candidates [--sizes 0,20000000,100000000] [--claims 1000000]`.
 *
 * Each candidate gets its own SQLite file with the registry's settings (WAL, the memory map and
 * page cache of src/stores/sqlite.ts), is filled with `size` SDK-shaped ids of one team (in key
 * order, quickly: the state a day of random claims leaves, not the time it took), and then claims
 * `claims` new random ids in transactions of 100 (a group commit of one request) without fsync, as
 * the group commit writes. Printed per id: the wall time, and the bytes this thread wrote (WAL
 * frames and checkpoints: what the disk must take).
 *
 * - btree: today's table, a WITHOUT ROWID B-tree keyed (team_id, id) as text. Random ids land on
 *   random leaves: each claim dirties a page, written to the WAL and again at the checkpoint.
 * - btree-int: the same keyed by integers (the team's number, the 16 hex digits as 64 bits): rows
 *   a third the size, so more fit in the cache; still a page per claim.
 * - lsm: claims appended to a rowid table in arrival order (the last page only) and found through
 *   an exact in-memory set; every `run` claims the set is written out as a sorted immutable run
 *   (sequential pages) with a Bloom filter, and four runs of one tier are merged into the next.
 *   A claim looks in the set, then in each run whose filter may hold the id.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { keyHash, RunFilter } from '../src/ingest/dedup/filter.js';
import { sortedIds } from './sorted-ids.js';

const TEAM = 'team_0123456789abcdefghij';
const GROUP = 100;

interface Candidate {
  name: string;
  /** Fills the structure with `count` ids in key order. */
  fill(count: number): void;
  /** Claims ids in one transaction; returns how many were new. */
  claim(ids: string[]): number;
  close(): void;
}

function openDb(dir: string): Database.Database {
  const db = new Database(path.join(dir, 'ids.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('mmap_size = 4294967296');
  db.pragma('cache_size = -262144');
  db.pragma('synchronous = NORMAL');
  return db;
}

const print = () => crypto.randomBytes(8).readBigInt64BE(0);

function btree(dir: string): Candidate {
  const db = openDb(dir);
  db.exec('CREATE TABLE ids (team_id TEXT NOT NULL, id TEXT NOT NULL, record_fp INTEGER, PRIMARY KEY (team_id, id)) WITHOUT ROWID');
  const insert = db.prepare('INSERT OR IGNORE INTO ids (team_id, id, record_fp) SELECT ?, key, value FROM json_each(?) RETURNING id');
  const bulk = db.prepare('INSERT INTO ids (team_id, id, record_fp) VALUES (?, ?, ?)');
  return {
    name: 'btree (today: text keys)',
    fill(count) {
      for (const chunk of sortedIds(count)) db.transaction(() => chunk.forEach((id) => bulk.run(TEAM, id, print())))();
      db.pragma('wal_checkpoint(TRUNCATE)');
    },
    claim(ids) {
      return db.transaction(() => insert.all(TEAM, `{${ids.map((id) => `"${id}":${print()}`).join(',')}}`).length)();
    },
    close: () => db.close(),
  };
}

function btreeInt(dir: string): Candidate {
  const db = openDb(dir);
  db.exec('CREATE TABLE ids (team INTEGER NOT NULL, id INTEGER NOT NULL, record_fp INTEGER, PRIMARY KEY (team, id)) WITHOUT ROWID');
  const insert = db.prepare('INSERT OR IGNORE INTO ids (team, id, record_fp) VALUES (?, ?, ?)');
  const asInt = (id: string) => BigInt.asIntN(64, BigInt(`0x${id}`));
  db.defaultSafeIntegers(true);
  return {
    name: 'btree-int (integer keys)',
    fill(count) {
      for (const chunk of sortedIds(count)) db.transaction(() => chunk.forEach((id) => insert.run(1n, asInt(id), print())))();
      db.pragma('wal_checkpoint(TRUNCATE)');
    },
    claim(ids) {
      return db.transaction(() => ids.reduce((n, id) => n + insert.run(1n, asInt(id), print()).changes, 0))();
    },
    close: () => db.close(),
  };
}

function lsm(dir: string, runSize: number): Candidate {
  const db = openDb(dir);
  db.exec('CREATE TABLE recent (seq INTEGER PRIMARY KEY, team_id TEXT NOT NULL, id TEXT NOT NULL, record_fp INTEGER)');
  const append = db.prepare('INSERT INTO recent (team_id, id, record_fp) VALUES (?, ?, ?)');
  const inRecent = new Set<string>();
  let runs: { table: string; rows: number; tier: number; filter: RunFilter; probe: Database.Statement }[] = [];
  let next = 0;
  const newRun = (tier: number, rows: number, write: (table: string) => void) => {
    const table = `run_${next++}`;
    db.exec(`CREATE TABLE ${table} (team_id TEXT NOT NULL, id TEXT NOT NULL, record_fp INTEGER, PRIMARY KEY (team_id, id)) WITHOUT ROWID`);
    write(table);
    const filter = RunFilter.sized(rows);
    for (const r of db.prepare(`SELECT team_id, id FROM ${table}`).iterate() as Iterable<{ team_id: string; id: string }>) filter.add(keyHash(r.team_id, r.id));
    runs.push({ table, rows, tier, filter, probe: db.prepare(`SELECT 1 FROM ${table} WHERE team_id = ? AND id = ?`) });
  };
  const flush = () => {
    db.transaction(() => {
      newRun(0, inRecent.size, (table) => db.exec(`INSERT INTO ${table} SELECT team_id, id, record_fp FROM recent ORDER BY team_id, id`));
      db.exec('DELETE FROM recent');
    })();
    inRecent.clear();
    // Size-tiered: four runs of a tier become one of the next (each id rewritten once per tier).
    for (let tier = 0; ; tier++) {
      const same = runs.filter((r) => r.tier === tier);
      if (same.length < 4) break;
      const rows = same.reduce((n, r) => n + r.rows, 0);
      db.transaction(() => {
        newRun(tier + 1, rows, (table) =>
          db.exec(`INSERT INTO ${table} SELECT team_id, id, record_fp FROM (${same.map((r) => `SELECT * FROM ${r.table}`).join(' UNION ALL ')}) ORDER BY team_id, id`),
        );
        for (const r of same) db.exec(`DROP TABLE ${r.table}`);
      })();
      runs = runs.filter((r) => !same.includes(r));
    }
  };
  return {
    name: `lsm (append, runs of ${runSize.toLocaleString('en-US')})`,
    fill(count) {
      if (count === 0) return;
      // The state after compaction: one sorted run of everything.
      newRun(9, count, (table) => {
        const bulk = db.prepare(`INSERT INTO ${table} (team_id, id, record_fp) VALUES (?, ?, ?)`);
        for (const chunk of sortedIds(count)) db.transaction(() => chunk.forEach((id) => bulk.run(TEAM, id, print())))();
      });
      db.pragma('wal_checkpoint(TRUNCATE)');
    },
    claim(ids) {
      let fresh = 0;
      db.transaction(() => {
        for (const id of ids) {
          const key = `${TEAM}\u0000${id}`;
          if (inRecent.has(key)) continue;
          const hash = keyHash(TEAM, id);
          if (runs.some((r) => r.filter.mayHave(hash) && r.probe.get(TEAM, id) !== undefined)) continue;
          append.run(TEAM, id, print());
          inRecent.add(key);
          fresh++;
        }
      })();
      if (inRecent.size >= runSize) flush();
      return fresh;
    },
    close: () => db.close(),
  };
}

const wchar = () => Number(/wchar: (\d+)/.exec(fs.readFileSync('/proc/thread-self/io', 'utf8'))![1]);

/** Runs every candidate at every size; prints a table. */
export function measureCandidates(sizes: readonly number[], claims: number): void {
  const makers = [btree, btreeInt, (dir: string) => lsm(dir, 250_000)];
  console.log(`dedup index candidates: ${claims.toLocaleString('en-US')} new random ids claimed in transactions of ${GROUP}, without fsync, after filling with the size given`);
  console.log('candidate                              ids before    fill s    µs per id    bytes written per id');
  for (const size of sizes) {
    for (const make of makers) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-dedup-candidate-'));
      const candidate = make(dir);
      try {
        const f0 = performance.now();
        candidate.fill(size);
        const fillSeconds = (performance.now() - f0) / 1000;
        const w0 = wchar();
        const t0 = performance.now();
        let fresh = 0;
        for (let done = 0; done < claims; done += GROUP) {
          const random = crypto.randomBytes(8 * GROUP).toString('hex');
          fresh += candidate.claim(Array.from({ length: GROUP }, (_, i) => random.slice(16 * i, 16 * i + 16)));
        }
        const micros = ((performance.now() - t0) * 1000) / claims;
        const bytes = (wchar() - w0) / claims;
        if (fresh !== claims) throw new Error(`${candidate.name}: ${fresh} of ${claims} random ids new`);
        console.log(
          `${candidate.name.padEnd(37)}  ${size.toLocaleString('en-US').padStart(11)}  ${fillSeconds.toFixed(1).padStart(8)}  ${micros.toFixed(2).padStart(11)}  ${Math.round(bytes).toLocaleString('en-US').padStart(22)}`,
        );
      } finally {
        candidate.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  }
}
