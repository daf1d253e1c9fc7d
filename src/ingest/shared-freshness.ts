/** What reads and back-pressure ask of the shared ingest log (PostgreSQL), on every instance. */
import { postgresOnly, type Database, type Sql } from '../stores/sql.js';
import { behind, type Backlog } from './freshness.js';
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
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly refreshMs = 500,
  ) {}

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

  /** Nothing to track here: the chunks are in the shared store, which the loader reads. */
  committed(_chunks: readonly LogChunk[]): void {}

  /** For a read (IngestPath.freshness): the team's acknowledged records in ClickHouse, or a 503. */
  async caughtUp(teamId: string, timeoutMs: number): Promise<void> {
    if (await this.waitFor(teamId, timeoutMs)) return;
    throw behind(this.last.rows);
  }

  /** True once every chunk visible now (committed before, on any instance) is loaded; false after `timeoutMs`. */
  async waitFor(teamId: string | undefined, timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    const latest = await this.db.get<{ pos: number | null }>(
      teamId === undefined ? postgresOnly('SELECT max(first_pos) AS pos FROM ingest_chunks') : postgresOnly('SELECT max(first_pos) AS pos FROM ingest_chunks WHERE team_id = $1'),
      teamId === undefined ? [] : [teamId],
    );
    const pos = latest?.pos;
    if (pos === null || pos === undefined) return true;
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
