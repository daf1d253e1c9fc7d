import type { Registry } from '../stores/sqlite.js';
import { IdFilter } from './id-filter.js';

/** What one append wrote: a chunk of the log, positions firstPos..lastPos of one team. */
export interface LogChunk {
  firstPos: number;
  lastPos: number;
  teamId: string;
  rows: number;
  bytes: number;
  committedAt: number;
}

const DAY_MS = 86_400_000;
const PARTITION = /^ingest_ids_(\d{8})$/;

/** `ingest_ids_YYYYMMDD` of the UTC day of `ms`. */
function partitionOf(ms: number): string {
  return `ingest_ids_${new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/**
 * The durable ingest log and its (team, id) index, in the registry's SQLite file. Everything here
 * runs inside the caller's transaction (the group commit), so a record is claimed exactly when its
 * line is appended: a record is a duplicate only if an earlier transaction committed it, and a
 * crash leaves either both or neither.
 *
 * The index is partitioned by the UTC day of the claim: one WITHOUT ROWID table per day
 * (`ingest_ids_YYYYMMDD`), the days of the window kept, older tables dropped whole. A claim inserts
 * the ids into today's table and looks them up in the older days' tables: one statement each per
 * team and group commit, the ids passed as one JSON array, so the per-id work stays in SQLite.
 *
 * Looking in seven older days costs more than the claim itself (npm run bench:dedup), and a new
 * id, the usual case, is in none of them: each day has an in-memory Bloom filter (IdFilter, about
 * 1.25 bytes per id), and only ids some filter may hold are looked up. Filters are filled as ids
 * are claimed, and from the day's table in the background after a start; until every older day's
 * filter is complete, every id is looked up in SQLite as before.
 */
export class IngestLog {
  private partitions: string[] = [];
  private today = '';
  private claimToday: { run(teamId: string, ids: string): { id: string }[] } | undefined;
  private seenBefore: ((teamId: string, ids: string) => { id: string }[]) | undefined;
  private readonly appendChunk;
  private nextPos: number;
  private readonly filters = new Map<string, IdFilter>();
  private readonly buildCursors = new Map<string, [string, string]>();
  private building: NodeJS.Immediate | undefined;
  private stopped = false;
  /** Ids looked up in the older days' tables so far (the filters' maybes, or all while they build). */
  olderLookups = 0;

  constructor(
    private readonly db: Registry,
    private readonly windowDays: number,
  ) {
    this.appendChunk = db.prepare(
      'INSERT INTO ingest_log (first_pos, last_pos, team_id, rows, bytes, committed_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    // Positions never repeat, even once the log is pruned empty: they name ClickHouse blocks.
    const row = db
      .prepare(
        `SELECT max((SELECT coalesce(max(last_pos), 0) FROM ingest_log), (SELECT loaded_pos FROM ingest_loader),
                    (SELECT coalesce(max(last_pos), 0) FROM ingest_blocks)) AS last`,
      )
      .get() as { last: number };
    this.nextPos = row.last + 1;
  }

  /** The position the next appended record gets. */
  get endPos(): number {
    return this.nextPos;
  }

  /**
   * Claims the client ids of one team's rows: per row, true when this is the first time the team
   * sent that id within the window (first occurrence in the batch included), false for a
   * duplicate. Server ids (`srv_...`) are new by construction and claim nothing. Call inside a
   * transaction, with the append of the claimed rows.
   */
  claim(teamId: string, ids: readonly string[], now: number): boolean[] {
    this.rollPartitions(now);
    const client = ids.filter((id) => !id.startsWith('srv_'));
    const fresh = new Set<string>();
    if (client.length > 0) {
      const known = new Set(this.lookUpOlder(teamId, client));
      const unknown = known.size === 0 ? client : client.filter((id) => !known.has(id));
      if (unknown.length > 0) {
        const today = this.filters.get(this.today)!;
        for (const r of this.claimToday!.run(teamId, JSON.stringify(unknown))) {
          fresh.add(r.id);
          today.add(teamId, r.id);
        }
      }
    }
    return ids.map((id) => {
      if (id.startsWith('srv_')) return true;
      // RETURNING lists an id once however often the batch repeats it: only its first row is new.
      return fresh.delete(id);
    });
  }

  /** The ids the older days of the window hold: the filters first, SQLite for their maybes. */
  private lookUpOlder(teamId: string, ids: string[]): string[] {
    if (!this.seenBefore) return [];
    let candidates = ids;
    if (this.partitions.every((p) => this.filters.get(p)?.complete)) {
      const filters = this.partitions.map((p) => this.filters.get(p)!);
      candidates = ids.filter((id) => filters.some((f) => f.mayHave(teamId, id)));
      if (candidates.length === 0) return [];
    }
    this.olderLookups += candidates.length;
    return this.seenBefore(teamId, JSON.stringify(candidates)).map((r) => r.id);
  }

  /** Resolves once every day's filter is complete (tests, benchmarks). */
  async filtersReady(): Promise<void> {
    while (this.building) await new Promise((resolve) => setImmediate(resolve));
  }

  /** Stops filling filters in the background (at shutdown). */
  stop(): void {
    this.stopped = true;
    if (this.building) clearImmediate(this.building);
    this.building = undefined;
  }

  /**
   * Fills incomplete filters from their day's table, 5,000 ids per turn of the event loop (keyset
   * pages, so no read transaction stays open between turns). A day dropped meanwhile is let go;
   * any other failure leaves the filter incomplete, and its day is looked up in SQLite.
   */
  private buildFilters(): void {
    if (this.building || this.stopped) return;
    const step = () => {
      this.building = undefined;
      const pending = [...this.filters].find(([, f]) => !f.complete);
      if (!pending || this.stopped) return;
      const [name, filter] = pending;
      const [team, id] = this.buildCursors.get(name) ?? ['', ''];
      let rows: { team_id: string; id: string }[];
      try {
        rows = this.db
          .prepare(`SELECT team_id, id FROM ${name} WHERE (team_id, id) > (?, ?) ORDER BY team_id, id LIMIT 5000`)
          .all(team, id) as { team_id: string; id: string }[];
      } catch {
        this.filters.delete(name);
        this.buildCursors.delete(name);
        if (this.filters.size > 0) this.building = setImmediate(step);
        return;
      }
      for (const r of rows) filter.add(r.team_id, r.id);
      if (rows.length < 5000) {
        filter.complete = true;
        this.buildCursors.delete(name);
      } else {
        const last = rows.at(-1)!;
        this.buildCursors.set(name, [last.team_id, last.id]);
      }
      this.building = setImmediate(step);
    };
    this.building = setImmediate(step);
  }

  /** Appends one team's claimed rows as a chunk of TSV lines; returns its positions. */
  append(teamId: string, lines: readonly string[], now: number): LogChunk {
    const body = Buffer.from(lines.join(''));
    const chunk = { firstPos: this.nextPos, lastPos: this.nextPos + lines.length - 1, teamId, rows: lines.length, bytes: body.length, committedAt: now };
    this.appendChunk.run(chunk.firstPos, chunk.lastPos, teamId, chunk.rows, chunk.bytes, now, body);
    this.nextPos += lines.length;
    return chunk;
  }

  /**
   * After a rolled-back transaction: positions go back (they stay gap-free; blocks are cut from
   * them), and today's partition is looked up again (its CREATE may have been rolled back too).
   */
  rolledBack(endPos: number): void {
    this.nextPos = endPos;
    this.today = '';
  }

  /**
   * Keeps today's partition and the `windowDays` before it: an id is remembered for at least
   * windowDays whole days. Older partitions are dropped whole (once a day, at the first claim of
   * a new UTC day).
   */
  private rollPartitions(now: number): void {
    const today = partitionOf(now);
    if (today === this.today) return;
    const oldest = partitionOf(now - this.windowDays * DAY_MS);
    const existing = () =>
      (this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ingest_ids_%'").all() as { name: string }[])
        .map((r) => r.name)
        .filter((name) => PARTITION.test(name))
        .sort();
    if (!existing().includes(today)) {
      this.db.exec(`CREATE TABLE ${today} (team_id TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (team_id, id)) WITHOUT ROWID`);
      // A new day's table is empty: its filter is complete from the start.
      const filter = new IdFilter();
      filter.complete = true;
      this.filters.set(today, filter);
    }
    const names = existing();
    for (const name of names) {
      if (name >= oldest) continue;
      this.db.exec(`DROP TABLE ${name}`);
      this.filters.delete(name);
    }
    this.partitions = names.filter((name) => name >= oldest && name !== today).reverse(); // newest first
    this.today = today;
    // Days this process has not filled a filter for (it started after they began) get one from their table.
    for (const name of [today, ...this.partitions]) if (!this.filters.has(name)) this.filters.set(name, new IdFilter());
    this.buildFilters();
    const claim = this.db.prepare(
      `INSERT OR IGNORE INTO ${today} (team_id, id) SELECT @team, value FROM json_each(@ids) WHERE true RETURNING id`,
    );
    this.claimToday = { run: (team, ids) => claim.all({ team, ids }) as { id: string }[] };
    if (this.partitions.length === 0) {
      this.seenBefore = undefined;
      return;
    }
    const exists = this.partitions.map((p) => `EXISTS (SELECT 1 FROM ${p} WHERE team_id = @team AND id = j.value)`).join(' OR ');
    const seen = this.db.prepare(`SELECT j.value AS id FROM json_each(@ids) AS j WHERE ${exists}`);
    this.seenBefore = (team, ids) => seen.all({ team, ids }) as { id: string }[];
  }

  /** The partition tables kept now, newest first (today's included). */
  partitionNames(): string[] {
    return [this.today, ...this.partitions].filter(Boolean);
  }
}
