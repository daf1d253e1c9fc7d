/**
 * The ingest log in the shared store (PostgreSQL, several instances): the (team, id)
 * claims and the chunks of claimed records, written in the caller's transaction, so a record is
 * claimed exactly when its chunk is appended, on whichever instance. The claim rules are those of
 * the SQLite log (claimSteps in ./log.ts); this file answers their questions with PostgreSQL.
 *
 * Exactly once across instances. Claims are unique per (team, id, day) in `ingest_claims`
 * (schema/postgres/003). An id is looked up in the older days of the window and inserted into
 * today's partition with ON CONFLICT DO NOTHING: of two instances inserting one id at once, the
 * second waits for the first's uncommitted entry and, once it commits, finds a duplicate. Two
 * claims either side of midnight would land in two partitions and miss each other, so in the first
 * OVERLAP_MS of a day an id is claimed in the day before as well (instances' clocks may differ by
 * less than that). Ids are inserted sorted, so two transactions' row locks are taken in one order
 * and never deadlock (callers claim their teams in sorted order too).
 */
import { all, get, perform, postgresOnly, run, type Sql, type Steps } from '../stores/sql.js';
import { claimSteps, type ClaimOutcome, type ContentPrint, type GroupLog, type LogChunk, LOG_FORMAT } from './log.js';
import type { EventRow } from '../domain/record-row.js';
import { rowBinaryOf } from './rowbinary.js';

const DAY_MS = 86_400_000;
/** Claims this close after midnight (UTC) go into the day before too; more than any clock skew between instances. */
export const OVERLAP_MS = 10 * 60_000;
/** Rows of one chunk at most: positions are taken from a sequence in steps of this. */
export const CHUNK_POSITIONS = 65_536;

/** YYYYMMDD of the UTC day of `ms`. */
export const claimDay = (ms: number): number => Number(new Date(ms).toISOString().slice(0, 10).replaceAll('-', ''));
const partitionName = (day: number) => `ingest_claims_${day}`;

export class SharedIngestLog implements GroupLog {
  constructor(
    /** Days an id is remembered before today (DEDUP_WINDOW_DAYS). */
    private readonly windowDays: number,
  ) {}

  /**
   * Makes the partitions of the window and of tomorrow, and drops those past the window, in a
   * transaction of its own under an advisory lock (instances rolling at once take turns). Run it at
   * start and once a day, before claims of a new day: a claim never waits for DDL.
   */
  async rollPartitions(sql: { transaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T> }, now: number): Promise<void> {
    await sql.transaction(async (tx) => {
      await tx.run("SELECT pg_advisory_xact_lock(hashtext('spendscope:ingest_claims partitions'))");
      // Dropping a partition waits for claims reading the parent; never long, and never queues them behind it for more than this.
      await tx.run("SET LOCAL lock_timeout = '2s'");
      const wanted = new Set<number>();
      for (let d = -this.windowDays; d <= 1; d++) wanted.add(claimDay(now + d * DAY_MS));
      const existing = (
        await tx.all<{ name: string }>(
          `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
            WHERE p.relname = 'ingest_claims'`,
        )
      ).map((r) => r.name);
      for (const day of wanted) {
        if (existing.includes(partitionName(day))) continue;
        await tx.run(`CREATE TABLE ${partitionName(day)} PARTITION OF ingest_claims FOR VALUES FROM (${day}) TO (${day + 1})`);
      }
      const oldest = claimDay(now - this.windowDays * DAY_MS);
      for (const name of existing) {
        const day = Number(name.slice('ingest_claims_'.length));
        if (day < oldest) await tx.run(`DROP TABLE ${name}`);
      }
    });
  }

  /** Claims one team's ids (the outcomes of IngestLog.claim), inside `sql`'s transaction. */
  claim(sql: Sql, teamId: string, ids: readonly string[], now: number, prints?: readonly ContentPrint[]): Promise<ClaimOutcome[]> {
    return perform(sql, this.claiming(teamId, ids, now, prints));
  }

  /** Appends one team's claimed rows inside `sql`'s transaction (see appending). */
  append(sql: Sql, teamId: string, rows: readonly EventRow[], now: number): Promise<LogChunk[]> {
    return perform(sql, this.appending(teamId, rows, now));
  }

  /** Nothing to take back after a rollback: positions come from a sequence, gaps and all. */
  readonly endPos = 0;
  rolledBack(): void {}

  /**
   * The claim of one team's ids, as steps of the caller's transaction. The partitions of `now`'s
   * day (and the day before) must exist: rollPartitions.
   */
  *claiming(teamId: string, ids: readonly string[], now: number, prints?: readonly ContentPrint[]): Steps<ClaimOutcome[]> {
    const today = claimDay(now);
    const days = [...(now % DAY_MS < OVERLAP_MS ? [claimDay(now - DAY_MS)] : []), today];
    const oldest = claimDay(now - this.windowDays * DAY_MS);
    const steps = claimSteps(teamId, ids, prints);
    let next = steps.next();
    while (!next.done) {
      const ask = next.value;
      let answer: unknown;
      if (ask.op === 'older') {
        const rows = yield* all<{ id: string }>(
          postgresOnly('SELECT DISTINCT id FROM ingest_claims WHERE team_id = $1 AND id = ANY($2::text[]) AND claim_day >= $3 AND claim_day < $4'),
          [ask.teamId, ask.ids, oldest, today],
        );
        answer = rows.map((r) => r.id);
      } else if (ask.op === 'insert') {
        answer = yield* this.insert(ask.teamId, ask.ids, ask.fps, days);
      } else {
        // Newest day first: a claim made in two days (around midnight) has one print in both.
        const rows = yield* all<{ id: string; fp: string | null }>(
          postgresOnly(`SELECT id, record_fp::text AS fp FROM ingest_claims WHERE team_id = $1 AND id = ANY($2::text[]) AND claim_day >= $3
                        ORDER BY claim_day DESC`),
          [ask.teamId, ask.ids, oldest],
        );
        const found = new Map<string, bigint | null>();
        for (const r of rows) if (!found.has(r.id)) found.set(r.id, r.fp === null ? null : BigInt(r.fp));
        answer = found;
      }
      next = steps.next(answer);
    }
    return next.value;
  }

  /**
   * Inserts the ids into each of `days` (the day before first, around midnight), sorted by id (a
   * repeat: its first row); returns the ids new in every one of them.
   */
  private *insert(teamId: string, ids: readonly string[], fps: readonly (string | null)[], days: readonly number[]): Steps<string[]> {
    let fresh: Set<string> | undefined;
    for (const day of days) {
      const rows = yield* all<{ id: string }>(
        postgresOnly(`INSERT INTO ingest_claims (team_id, id, claim_day, record_fp)
                     SELECT $1, u.id, $2, u.fp FROM unnest($3::text[], $4::bigint[]) WITH ORDINALITY AS u(id, fp, n) ORDER BY u.id, u.n
                     ON CONFLICT DO NOTHING RETURNING id`),
        [teamId, day, ids, fps],
      );
      const inserted = new Set(rows.map((r) => r.id));
      fresh = fresh ? new Set([...fresh].filter((id) => inserted.has(id))) : inserted;
    }
    return [...(fresh ?? [])];
  }

  /**
   * Appends one team's claimed rows in the caller's transaction, as RowBinary chunks of at most
   * CHUNK_POSITIONS rows, each row with its position.
   */
  *appending(teamId: string, rows: readonly EventRow[], now: number): Steps<LogChunk[]> {
    const chunks: LogChunk[] = [];
    for (let start = 0; start < rows.length; start += CHUNK_POSITIONS) {
      const part = rows.slice(start, start + CHUNK_POSITIONS);
      const { pos } = (yield* get<{ pos: number }>(postgresOnly("SELECT nextval('ingest_positions') AS pos")))!;
      // A copy: the writer's buffer is written over by the next chunk before this one is sent.
      const body = Buffer.from(rowBinaryOf(part, pos));
      const chunk: LogChunk = { firstPos: pos, lastPos: pos + part.length - 1, teamId, rows: part.length, bytes: body.length, committedAt: now, format: LOG_FORMAT };
      yield* run(
        postgresOnly(`INSERT INTO ingest_chunks (first_pos, last_pos, team_id, rows, bytes, committed_at, format, body)
                      VALUES ($1, $2, $3, $4, $5, $6, '${LOG_FORMAT}', $7)`),
        [chunk.firstPos, chunk.lastPos, teamId, chunk.rows, chunk.bytes, now, body],
      );
      chunks.push(chunk);
    }
    return chunks;
  }
}
