/**
 * The (team, id) index of claimed ids on SQLite: a log-structured merge of claims, so that its
 * cost per claim stays flat however many ids a day holds and whatever their order, where a
 * B-tree's grows with it (docs/performance.md, the dedup index).
 *
 * - Level 0: claims are appended to a rowid table in the registry (`ingest_claims_<day>_<n>`),
 *   inside the group commit's transaction, so a claim is durable exactly when its record is
 *   acknowledged. Appends fill the table's last page only. An exact in-memory map of the table's
 *   keys answers look-ups. The table is frozen at LEVEL0_KEYS keys or at the first claim of another
 *   UTC day, and a new one takes the appends.
 * - Runs: a worker thread (worker.ts) sorts a frozen table into a run (run-file.ts), an immutable
 *   SQLite file written in key order with a Bloom filter. One registry transaction then lists the
 *   run in the manifest (`ingest_runs`) and drops the frozen table: a crash leaves either the table
 *   or the run, and a run file the manifest does not list is removed at the next start. Four runs
 *   of one day and level are merged into one of the next level, in the same way, so a day of N
 *   claims has O(log N) runs.
 * - Look-ups: the level-0 maps, then each run whose filter may hold the key (a probe of its file).
 *   Ids are kept per UTC day of the claim; a day older than the window is dropped whole (its
 *   tables and files), and look-ups skip it at once.
 * - Day tables of the B-tree index this replaces (`ingest_ids_YYYYMMDD`) are probed as they are
 *   until the worker has rewritten each as a run; then they are dropped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { Registry } from '../../stores/sqlite.js';
import { keyHash, RunFilter, teamHash, type KeyHash } from './filter.js';
import { RunReader, writeRun, type ClaimRow } from './run-file.js';
import type { RunJob, RunJobResult, RunJobSpec } from './worker.js';
import { DAY_MS, LEVEL0_KEYS, FAN_IN, GEN_TABLE, LEGACY_TABLE, RUN_FILE, dayOf, runFolder, KeyMap, type Generation, type Run, type LegacyDay, type RunWorker, type ClaimIndexOptions } from './parts.js';

export { dayOf, LEVEL0_KEYS, runFolder, type ClaimIndexOptions } from './parts.js';

/** The (team, id) claims of a registry: one open on it at a time (its log stops it before another opens, as at a restart). */
export class ClaimIndex {
  private readonly folder: string;
  private readonly level0Keys: number;
  private gens: Generation[] = [];
  private current: Generation | undefined;
  private runs: Run[] = [];
  private legacy: LegacyDay[] = [];
  private insertInto = new Map<string, Database.Statement>();
  private nextRun: number;
  private nextSeq: number;
  private oldest = '';
  private lastNow = 0;
  private pumping: NodeJS.Immediate | NodeJS.Timeout | undefined;
  private stopped = false;
  private nextJob = 1;
  /** Flushes of level 0 and rewrites of legacy tables; merges: a slow merge never delays a flush. */
  private readonly flusher: RunWorker = {};
  private readonly merger: RunWorker = {};
  /** Run files (and legacy tables) probed after their filter said maybe: tests and benchmarks. */
  probes = 0;
  /** The last failure of a background job (it is tried again), for health and tests. */
  lastError: string | undefined;

  constructor(
    private readonly db: Registry,
    private readonly windowDays: number,
    options: ClaimIndexOptions = {},
  ) {
    this.level0Keys = options.level0Keys ?? LEVEL0_KEYS;
    this.folder = runFolder(db);
    fs.mkdirSync(this.folder, { recursive: true });
    const listed = db.prepare('SELECT file, day, level, rows FROM ingest_runs ORDER BY file').all() as { file: string; day: string; level: number; rows: number }[];
    const names = new Set(listed.map((r) => r.file));
    let maxRun = 0;
    for (const name of fs.readdirSync(this.folder)) {
      const n = RUN_FILE.exec(name);
      if (n) maxRun = Math.max(maxRun, Number(n[1]));
      // Not in the manifest: a run whose writing or registration never finished, or one merged away.
      if (!names.has(name)) fs.rmSync(path.join(this.folder, name), { force: true });
    }
    for (const r of listed) {
      maxRun = Math.max(maxRun, Number(RUN_FILE.exec(r.file)?.[1] ?? 0));
      const file = path.join(this.folder, r.file);
      if (!fs.existsSync(file)) throw new Error(`ingest log: the dedup run ${file} listed in ingest_runs is missing; claimed ids would be lost`);
      this.runs.push({ file: r.file, day: r.day, level: r.level, rows: r.rows, reader: new RunReader(file), merging: false });
    }
    this.nextRun = maxRun + 1;
    let maxSeq = 0;
    for (const table of this.tables()) {
      const gen = GEN_TABLE.exec(table);
      if (gen) {
        maxSeq = Math.max(maxSeq, Number(gen[2]));
        this.gens.push({ table, day: gen[1]!, seq: Number(gen[2]), keys: this.load(table), frozen: true, building: false });
      }
      const legacy = LEGACY_TABLE.exec(table);
      if (legacy) this.legacy.push(this.legacyDay(table, legacy[1]!));
    }
    this.gens.sort((a, b) => a.seq - b.seq);
    this.nextSeq = maxSeq + 1;
    // The newest level-0 table takes appends again; the others are written as runs.
    this.current = this.gens.at(-1);
    if (this.current) this.current.frozen = false;
    this.schedule();
  }

  private tables(): string[] {
    return (this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE 'ingest_claims_%' OR name LIKE 'ingest_ids_%')").all() as { name: string }[]).map(
      (r) => r.name,
    );
  }

  private load(table: string): KeyMap {
    const keys = new KeyMap();
    const rows = this.db.prepare(`SELECT team_id, id, record_fp FROM ${table} ORDER BY rowid`).safeIntegers(true).iterate() as Iterable<ClaimRow>;
    for (const r of rows) keys.add(r.team_id, r.id, r.record_fp === null ? null : r.record_fp.toString());
    return keys;
  }

  private legacyDay(table: string, day: string): LegacyDay {
    const columns = new Set((this.db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name));
    // Day tables created before prints were kept: NULL, unknown (never a conflict).
    if (!columns.has('record_fp')) this.db.exec(`ALTER TABLE ${table} ADD COLUMN record_fp INTEGER`);
    return { table, day, probe: this.db.prepare(`SELECT record_fp FROM ${table} WHERE team_id = ? AND id = ?`).safeIntegers(true), building: false };
  }

  /**
   * Before a claim at `now` (inside the group's transaction): the window it looks in, and a
   * level-0 table of its day to append to (created in this transaction when needed).
   */
  roll(now: number): void {
    this.lastNow = now;
    const day = dayOf(now);
    const oldest = dayOf(now - this.windowDays * DAY_MS);
    if (oldest !== this.oldest) {
      this.oldest = oldest;
      this.schedule();
    }
    if (this.current && this.current.day !== day) this.freeze(this.current);
    if (this.current) return;
    const seq = this.nextSeq++;
    const table = `ingest_claims_${day}_${seq}`;
    this.db.exec(`CREATE TABLE ${table} (team_id TEXT NOT NULL, id TEXT NOT NULL, record_fp INTEGER)`);
    this.current = { table, day, seq, keys: new KeyMap(), frozen: false, building: false };
    this.gens.push(this.current);
  }

  private freeze(gen: Generation): void {
    gen.frozen = true;
    if (gen === this.current) this.current = undefined;
    this.schedule();
  }

  /**
   * The stored print of each of these ids the window holds (null: claimed without one); ids it
   * does not hold are absent from the answer.
   */
  find(teamId: string, ids: readonly string[]): Map<string, bigint | null> {
    const found = new Map<string, bigint | null>();
    const gens = this.gens.filter((g) => g.day >= this.oldest && g.keys.size > 0);
    const runs = this.runs.filter((r) => r.day >= this.oldest);
    const legacy = this.legacy.filter((l) => l.day >= this.oldest);
    const team = runs.length > 0 ? teamHash(teamId) : undefined;
    for (const id of ids) {
      let hit: { fp: bigint | null } | undefined;
      // Newest first: a key claimed again after its day left the window is found at its latest claim.
      for (let g = gens.length - 1; g >= 0 && !hit; g--) {
        const fp = gens[g]!.keys.get(teamId, id);
        if (fp !== undefined) hit = { fp: fp === null ? null : BigInt(fp) };
      }
      if (!hit && team) {
        const hash: KeyHash = keyHash(team, id);
        for (let r = runs.length - 1; r >= 0 && !hit; r--) {
          const run = runs[r]!;
          if (!run.reader.filter.mayHave(hash)) continue;
          this.probes++;
          hit = run.reader.get(teamId, id);
        }
      }
      for (let l = 0; l < legacy.length && !hit; l++) {
        this.probes++;
        const row = legacy[l]!.probe.get(teamId, id) as { record_fp: bigint | null } | undefined;
        if (row) hit = { fp: row.record_fp };
      }
      if (hit) found.set(id, hit.fp);
    }
    return found;
  }

  /**
   * Appends new ids (with their prints, decimal text or null) to today's level-0 table, inside
   * the group's transaction; an id given twice is appended once (its first print). Returns the
   * ids appended. Call roll() first.
   */
  insert(teamId: string, ids: readonly string[], fps: readonly (string | null)[]): string[] {
    const gen = this.current!;
    const inserted: string[] = [];
    const members: string[] = [];
    ids.forEach((id, i) => {
      if (!gen.keys.add(teamId, id, fps[i] ?? null)) return;
      inserted.push(id);
      members.push(`${JSON.stringify(id)}:${fps[i] ?? 'null'}`);
    });
    if (inserted.length === 0) return inserted;
    let insert = this.insertInto.get(gen.table);
    if (!insert) {
      // The ids (with their prints) as the members of one JSON object: one statement per team and
      // group, the per-id work in SQLite. No SQL function here: a statement calling one may fail
      // midway, so SQLite would give it a statement journal (a copy of every page it changes).
      insert = this.db.prepare(`INSERT INTO ${gen.table} (team_id, id, record_fp) SELECT @team, key, value FROM json_each(@rows) WHERE true`);
      this.insertInto.clear();
      this.insertInto.set(gen.table, insert);
    }
    insert.run({ team: teamId, rows: `{${members.join(',')}}` });
    if (gen.keys.size >= this.level0Keys) this.freeze(gen);
    return inserted;
  }

  /**
   * After the group's transaction rolled back: the level-0 maps are read again from their tables
   * (a table created in that transaction is gone, and keys it appended are not there). Rare (a
   * failed write), and at most a few level-0 tables are read.
   */
  rolledBack(): void {
    const tables = new Set(this.tables());
    this.gens = this.gens.filter((g) => tables.has(g.table));
    for (const gen of this.gens) if (!gen.building) gen.keys = this.load(gen.table);
    if (this.current && !tables.has(this.current.table)) this.current = undefined;
    this.insertInto.clear();
  }

  /** Runs the background work (expiry, flushes, merges) soon, outside any transaction. */
  private schedule(): void {
    if (this.pumping || this.stopped) return;
    this.pumping = setImmediate(() => {
      this.pumping = undefined;
      this.pump();
    });
  }

  private retryLater(ms: number): void {
    if (this.pumping || this.stopped) return;
    this.pumping = setTimeout(() => {
      this.pumping = undefined;
      this.pump();
    }, ms);
    this.pumping.unref();
  }

  private pump(): void {
    if (this.stopped || !this.db.open) return;
    // A transaction of another caller is open on this connection (awaiting I/O): not inside it.
    if (this.db.inTransaction) return this.retryLater(5);
    this.expire();
    if (!this.flusher.job) {
      const gen = this.gens.find((g) => g.frozen && !g.building);
      const legacy = this.legacy.find((l) => !l.building && l.day >= this.oldest);
      if (gen && gen.keys.size === 0) {
        this.db.exec(`DROP TABLE IF EXISTS ${gen.table}`);
        this.gens = this.gens.filter((g) => g !== gen);
        return this.schedule();
      }
      if (gen) this.flush(gen);
      else if (legacy) this.convert(legacy);
    }
    if (!this.merger.job) {
      const merge = this.mergeable();
      if (merge) this.merge(merge);
    }
  }

  /** Days older than the window: their level-0 tables, legacy tables and runs, dropped whole. */
  private expire(): void {
    if (!this.oldest) return;
    const gens = this.gens.filter((g) => g.day < this.oldest && g !== this.current && !g.building);
    const legacy = this.legacy.filter((l) => l.day < this.oldest && !l.building);
    const runs = this.runs.filter((r) => r.day < this.oldest && !r.merging);
    if (gens.length + legacy.length + runs.length === 0) return;
    this.db.transaction(() => {
      for (const t of [...gens, ...legacy]) this.db.exec(`DROP TABLE IF EXISTS ${t.table}`);
      const unlist = this.db.prepare('DELETE FROM ingest_runs WHERE file = ?');
      for (const r of runs) unlist.run(r.file);
    })();
    this.gens = this.gens.filter((g) => !gens.includes(g));
    this.legacy = this.legacy.filter((l) => !legacy.includes(l));
    this.runs = this.runs.filter((r) => !runs.includes(r));
    for (const r of runs) this.removeFile(r);
  }

  private removeFile(run: Run): void {
    run.reader.close();
    fs.rmSync(path.join(this.folder, run.file), { force: true });
  }

  /** Four runs of one day and level (the oldest), when some day has that many. */
  private mergeable(): Run[] | undefined {
    const groups = new Map<string, Run[]>();
    for (const run of this.runs) {
      if (run.merging || run.day < this.oldest) continue;
      const key = `${run.day}/${run.level}`;
      const group = groups.get(key) ?? [];
      group.push(run);
      groups.set(key, group);
      if (group.length === FAN_IN) return group;
    }
    return undefined;
  }

  private newRunFile(): string {
    return `run-${String(this.nextRun++).padStart(8, '0')}.db`;
  }

  private flush(gen: Generation): void {
    this.writeTable(gen, true, 0, () => this.gens.includes(gen), () => (this.gens = this.gens.filter((g) => g !== gen)));
  }

  private convert(legacy: LegacyDay): void {
    this.writeTable(legacy, false, undefined, () => this.legacy.includes(legacy), () => (this.legacy = this.legacy.filter((l) => l !== legacy)));
  }

  /**
   * A registry table written as one run by the flush worker, then listed with its table dropped.
   * `held`: it is still wanted (not expired meanwhile); `level` undefined: by its size.
   */
  private writeTable(source: { table: string; day: string; building: boolean }, rowid: boolean, level: number | undefined, held: () => boolean, forget: () => void): void {
    source.building = true;
    const file = this.newRunFile();
    const job = { kind: 'table', registry: this.db.name, table: source.table, rowid, file } as const;
    this.start(this.flusher, job, (rows, filter) => {
      source.building = false;
      if (!held()) return false;
      this.register({ file, day: source.day, level: level ?? levelOf(rows, this.level0Keys), rows }, filter, () => this.db.exec(`DROP TABLE ${source.table}`));
      forget();
      return true;
    }, () => (source.building = false));
  }

  private merge(sources: Run[]): void {
    for (const r of sources) r.merging = true;
    const file = this.newRunFile();
    const keys = sources.reduce((n, r) => n + r.rows, 0);
    const paths = sources.map((r) => path.join(this.folder, r.file));
    const level = Math.max(...sources.map((r) => r.level)) + 1;
    this.start(this.merger, { kind: 'merge', sources: paths, keys, file }, (rows, filter) => {
      for (const r of sources) r.merging = false;
      if (!sources.every((r) => this.runs.includes(r))) return false;
      const unlist = this.db.prepare('DELETE FROM ingest_runs WHERE file = ?');
      this.register({ file, day: sources[0]!.day, level, rows }, filter, () => sources.forEach((r) => unlist.run(r.file)));
      this.runs = this.runs.filter((r) => !sources.includes(r));
      for (const r of sources) this.removeFile(r);
      return true;
    }, () => sources.forEach((r) => (r.merging = false)));
  }

  /** Lists a finished run in the manifest, with what it replaces, in one registry transaction. */
  private register(run: Omit<Run, 'reader' | 'merging'>, filter: RunFilter, replaces: () => void): void {
    const reader = new RunReader(path.join(this.folder, run.file), filter);
    try {
      this.db.transaction(() => {
        this.db.prepare('INSERT INTO ingest_runs (file, day, level, rows) VALUES (?, ?, ?, ?)').run(run.file, run.day, run.level, run.rows);
        replaces();
      })();
    } catch (err) {
      reader.close();
      throw err;
    }
    this.runs.push({ ...run, reader, merging: false });
  }

  /**
   * Hands a job to a worker; `done` registers its run (returns false when what it was made from is
   * gone, e.g. expired meanwhile: the file is removed). A failed job is tried again later.
   */
  private start(target: RunWorker, job: RunJobSpec, done: (rows: number, filter: RunFilter) => boolean, failed: () => void): void {
    const id = this.nextJob++;
    const file = path.join(this.folder, job.file);
    const worker = (target.worker ??= this.spawn(target));
    worker.ref();
    target.job = {
      id,
      done: (result) => {
        target.job = undefined;
        worker.unref();
        if (this.stopped || !this.db.open) return;
        let kept = false;
        try {
          if ('error' in result) throw new Error(result.error);
          if (this.db.inTransaction) throw new Error('a transaction is open on the registry connection');
          kept = done(result.rows, new RunFilter(new Uint32Array(result.words)));
          this.lastError = undefined;
        } catch (err) {
          failed();
          this.lastError = err instanceof Error ? err.message : String(err);
          this.retryLater(1000);
        } finally {
          if (!kept) fs.rmSync(file, { force: true });
        }
        this.schedule();
      },
    };
    worker.postMessage({ ...job, id, file } as RunJob);
  }

  private spawn(target: RunWorker): Worker {
    const worker = new Worker(new URL('./worker.js', import.meta.url), { name: 'dedup-runs' });
    worker.unref();
    worker.on('message', (result: RunJobResult) => {
      if (target.job?.id === result.id) target.job.done(result);
    });
    // A thread that died fails its job; the next job starts another.
    const died = (err: Error) => {
      if (target.worker === worker) target.worker = undefined;
      target.job?.done({ id: target.job.id, error: err.message });
    };
    worker.on('error', died);
    worker.on('exit', (code) => {
      if (target.worker === worker) died(new Error(`the dedup run worker exited (${code})`));
    });
    return worker;
  }

  /** Resolves once nothing is left to flush, convert or merge, and no job runs (tests, benchmarks). */
  async settled(): Promise<void> {
    for (;;) {
      const work =
        this.flusher.job ||
        this.merger.job ||
        this.pumping ||
        this.gens.some((g) => g.frozen) ||
        this.legacy.some((l) => l.day >= this.oldest || !this.oldest) ||
        this.mergeable();
      if (!work || this.stopped) return;
      if (this.lastError) throw new Error(`ingest log: a dedup run could not be written: ${this.lastError}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Stops the background work (at shutdown); a run being written is finished at the next start. */
  stop(): void {
    this.stopped = true;
    if (this.pumping) {
      clearImmediate(this.pumping as NodeJS.Immediate);
      clearTimeout(this.pumping as NodeJS.Timeout);
    }
    this.pumping = undefined;
    for (const target of [this.flusher, this.merger]) {
      void target.worker?.terminate();
      target.worker = undefined;
      target.job = undefined;
    }
    for (const run of this.runs) run.reader.close();
  }

  /** What the index holds now (tests, benchmarks, metrics). */
  describe(): { level0: { table: string; day: string; keys: number }[]; runs: { file: string; day: string; level: number; rows: number }[]; legacy: string[] } {
    return {
      level0: this.gens.map((g) => ({ table: g.table, day: g.day, keys: g.keys.size })),
      runs: this.runs.map(({ file, day, level, rows }) => ({ file, day, level, rows })),
      legacy: this.legacy.map((l) => l.table),
    };
  }

  /** The last claim's time (the window's end). */
  get now(): number {
    return this.lastNow;
  }
}

/** The level a run of `rows` keys belongs to: level L holds up to level0Keys * 4^L. */
function levelOf(rows: number, level0Keys: number): number {
  let level = 0;
  for (let size = level0Keys; size < rows; size *= FAN_IN) level++;
  return level;
}

/**
 * Writes `rows` (in key order) as one run of `day` and lists it in the manifest, on a registry no
 * service has open: `bench:ingest --prefill` makes the index of a busy day this way.
 */
export function addRun(db: Registry, day: string, rows: Iterable<ClaimRow>, keys: number): void {
  const folder = runFolder(db);
  fs.mkdirSync(folder, { recursive: true });
  const taken = fs.readdirSync(folder).map((name) => Number(RUN_FILE.exec(name)?.[1] ?? 0));
  const file = `run-${String(Math.max(0, ...taken) + 1).padStart(8, '0')}.db`;
  const written = writeRun(path.join(folder, file), rows, keys);
  db.prepare('INSERT INTO ingest_runs (file, day, level, rows) VALUES (?, ?, ?, ?)').run(file, day, levelOf(written.rows, LEVEL0_KEYS), written.rows);
}
