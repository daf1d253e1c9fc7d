/** What reads and back-pressure ask of the shared ingest log (PostgreSQL), on every instance. */
import { postgresOnly, type Database, type Sql } from '../stores/sql.js';
import { behind, type Backlog, type LoadFrontier } from './freshness.js';
import type { LogChunk } from './log.js';

/** Wakes the loading instance: a read (on any instance) waits for it. */
export const LOADER_CHANNEL = 'spendscope_loader';

/** The unloaded part of the shared log. */
export async function sharedBacklog(sql: Sql): Promise<Backlog> {
  const row = (await sql.get<{ rows: number; bytes: number; oldest: number | null }>(
    postgresOnly('SELECT coalesce(sum(rows), 0)::bigint AS rows, coalesce(sum(bytes), 0)::bigint AS bytes, min(committed_at) AS oldest FROM ingest_chunks'),
  ))!;
  return { rows: Number(row.rows), bytes: Number(row.bytes), oldestCommittedAt: row.oldest === null ? null : Number(row.oldest) };
}

/** What reads wait on, for the shared log; the backlog is read every `refreshMs`, as the bound it guards is coarse. */
export class SharedFreshness {
  private last: Backlog = { rows: 0, bytes: 0, oldestCommittedAt: null };
  private readonly frontier: SharedLoadFrontier;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly refreshMs = 500,
  ) {
    this.frontier = new SharedLoadFrontier(db);
  }

  /** Starts refreshing the backlog. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer ??= setInterval(() => void this.refresh().catch(() => {}), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async refresh(): Promise<void> {
    this.last = await sharedBacklog(this.db);
  }

  backlog(): Backlog {
    return this.last;
  }

  /** Freshness.loadFrontier, of the shared log. */
  loadFrontier(now = Date.now()): Promise<LoadFrontier> {
    return this.frontier.through(now);
  }

  /** Nothing to track here: the chunks are in the shared store, which the loader reads. */
  committed(_chunks: readonly LogChunk[]): void {}

  /**
   * For a read (IngestPath.freshness): the team's acknowledged records in ClickHouse, with the
   * milliseconds that took, or a 503. The shared log keeps no event times per chunk: a read of any
   * times waits for all of them.
   */
  async caughtUp(teamId: string, timeoutMs: number): Promise<number> {
    const started = performance.now();
    const waited = await this.waitUntilLoaded(teamId, timeoutMs);
    if (waited === false) throw behind(this.last.rows);
    return waited === 'nothing' ? 0 : performance.now() - started;
  }

  /** True once every chunk visible now (committed before, on any instance) is loaded; false after `timeoutMs`. */
  async waitFor(teamId: string | undefined, timeoutMs: number): Promise<boolean> {
    return (await this.waitUntilLoaded(teamId, timeoutMs)) !== false;
  }

  /** waitFor, and 'nothing' when no chunk was unloaded. */
  private async waitUntilLoaded(teamId: string | undefined, timeoutMs: number): Promise<boolean | 'nothing'> {
    const until = Date.now() + timeoutMs;
    const latest = await this.db.get<{ pos: number | null }>(
      teamId === undefined ? postgresOnly('SELECT max(first_pos) AS pos FROM ingest_chunks') : postgresOnly('SELECT max(first_pos) AS pos FROM ingest_chunks WHERE team_id = $1'),
      teamId === undefined ? [] : [teamId],
    );
    const pos = latest?.pos;
    if (pos === null || pos === undefined) return 'nothing';
    await this.db.run(postgresOnly(`SELECT pg_notify('${LOADER_CHANNEL}', '')`));
    for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
      const left = await this.db.get(
        teamId === undefined
          ? postgresOnly('SELECT 1 FROM ingest_chunks WHERE first_pos <= $1 LIMIT 1')
          : postgresOnly('SELECT 1 FROM ingest_chunks WHERE team_id = $2 AND first_pos <= $1 LIMIT 1'),
        teamId === undefined ? [pos] : [pos, teamId],
      );
      if (!left) return true;
      if (Date.now() + wait > until) return false;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** Positions one chunk of the shared log may span (schema/postgres/003: the sequence's increment). */
const CHUNK_SPAN = 65_536;

/**
 * The shared log's load frontier (Freshness.loadFrontier), for a reader of what is loaded. Positions
 * come from a sequence inside each commit's transaction, so one taken now may commit after a later
 * one: a position counts only once it was taken `marginMs` ago (a commit's transaction ends well
 * within that), from samples of the sequence this keeps; and only below the first chunk still
 * unloaded.
 */
export class SharedLoadFrontier {
  private samples: { at: number; last: number }[] = [];

  constructor(
    private readonly db: Sql,
    private readonly marginMs = 5_000,
  ) {}

  async through(now = Date.now()): Promise<LoadFrontier> {
    const row = (await this.db.get<{ last: string | number; called: boolean; unloaded: string | number | null; oldest: string | number | null }>(
      postgresOnly(`SELECT (SELECT last_value FROM ingest_positions) AS last, (SELECT is_called FROM ingest_positions) AS called,
                           (SELECT min(first_pos) FROM ingest_chunks) AS unloaded, (SELECT min(committed_at) FROM ingest_chunks) AS oldest`),
    ))!;
    this.samples.push({ at: now, last: row.called ? Number(row.last) + CHUNK_SPAN - 1 : 0 });
    let settled: { at: number; last: number } | undefined;
    while (this.samples.length > 0 && this.samples[0]!.at <= now - this.marginMs) settled = this.samples.shift();
    if (settled) this.samples.unshift(settled);
    if (!settled) return { pos: 0, at: 0 };
    const pos = row.unloaded === null ? settled.last : Math.min(settled.last, Number(row.unloaded) - 1);
    // A chunk committed before the oldest unloaded one may hold later positions than it, if it took its own within the margin after.
    return { pos, at: row.oldest === null ? settled.at : Math.min(settled.at, Number(row.oldest) - this.marginMs) };
  }
}
