import type { FieldError } from '../http/errors.js';
import type { Backlog } from '../ingest/freshness.js';
import type { BacklogLimits } from '../ingest/group-commit.js';

/**
 * How long a failed write to the ingest log keeps the instance out of rotation when nothing has
 * been written since. Only a later successful group commit proves the log writable again, and an
 * instance a load balancer took out of rotation gets no writes: without this bound it would stay
 * out for good. Past it the instance answers ready again (`log: "unverified"`); the next batch tests
 * the log, and a failure takes the instance out again at once.
 */
export const LOG_FAILURE_HOLD_MS = 30_000;

/** What readiness looks at, gathered by the route (kept apart so that the rules are plain code). */
export interface ReadinessState {
  /** "ok" or what failed, per store. */
  stores: { registry: string; clickhouse: string };
  backlog: Backlog;
  /** The group commit's bound: at or past it, every ingest write is refused (GroupCommit.write). */
  limits: BacklogLimits;
  loaderFailing: boolean;
  /** The last failed group commit, when none has been acknowledged since. */
  logFailure: { at: number; message: string } | undefined;
  /** The group commit refuses new writes: the service is shutting down. */
  closed: boolean;
  now: number;
}

export type LogState = 'ok' | 'failing' | 'unverified';

export interface Readiness {
  /** Empty when ready; else one entry per reason, `field` naming the body field that shows it. */
  reasons: FieldError[];
  ingest: {
    backlogRows: number;
    backlogBytes: number;
    backlogMaxRows: number;
    backlogMaxBytes: number;
    oldestUnloadedAgeMs: number | null;
    loader: 'ok' | 'failing';
    log: LogState;
    logFailedAgoMs: number | null;
  };
}

const short = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text);

/**
 * Whether this instance can acknowledge ingest now, and if not, why. Not ready: the registry does
 * not answer; the backlog is at its bound (the same test as GroupCommit.write, so a ready answer and a
 * refused batch never disagree); the last group commit failed (disk full, I/O error) and none has
 * succeeded since, for up to LOG_FAILURE_HOLD_MS; the service is shutting down. A failing loader
 * or ClickHouse not answering, with the backlog under its bound, is ready: records are still
 * acknowledged (`loader: "failing"`, `stores.clickhouse` saying what failed).
 */
export function readiness(state: ReadinessState): Readiness {
  const { backlog, limits, now } = state;
  const reasons: FieldError[] = [];
  // Every acknowledgement is a write to the registry (SQLite or PostgreSQL): without it, nothing can
  // be acknowledged. ClickHouse is not: records wait in the ingest log while it is down, as with a
  // failing loader, and the backlog bound below decides. Unready on a ClickHouse outage would take
  // every instance out of a load balancer at once, and ingest with them.
  if (state.stores.registry !== 'ok') reasons.push({ field: 'stores.registry', message: `is not answering (${state.stores.registry})` });
  if (state.closed) reasons.push({ field: 'status', message: 'the service is shutting down: it takes no new writes' });
  if (backlog.rows >= limits.maxRows) {
    reasons.push({
      field: 'ingest.backlogRows',
      message: `${backlog.rows} records are not yet in ClickHouse, at the bound of ${limits.maxRows} (INGEST_BACKLOG_MAX_ROWS): ingest answers 503 until the loader catches up`,
    });
  }
  if (backlog.bytes >= limits.maxBytes) {
    reasons.push({
      field: 'ingest.backlogBytes',
      message: `${backlog.bytes} bytes of records are not yet in ClickHouse, at the bound of ${limits.maxBytes} (INGEST_BACKLOG_MAX_BYTES): ingest answers 503 until the loader catches up`,
    });
  }
  const failedAgo = state.logFailure ? Math.max(0, now - state.logFailure.at) : null;
  const log: LogState = failedAgo === null ? 'ok' : failedAgo < LOG_FAILURE_HOLD_MS ? 'failing' : 'unverified';
  if (log === 'failing') {
    reasons.push({
      field: 'ingest.log',
      message: `the last write to the ingest log failed ${Math.round(failedAgo! / 1000)} s ago (${short(state.logFailure!.message)}) and none has succeeded since: ingest answers 503`,
    });
  }
  return {
    reasons,
    ingest: {
      backlogRows: backlog.rows,
      backlogBytes: backlog.bytes,
      backlogMaxRows: limits.maxRows,
      backlogMaxBytes: limits.maxBytes,
      oldestUnloadedAgeMs: backlog.oldestCommittedAt === null ? null : Math.max(0, now - backlog.oldestCommittedAt),
      loader: state.loaderFailing ? 'failing' : 'ok',
      log,
      logFailedAgoMs: failedAgo,
    },
  };
}
