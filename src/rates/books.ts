/**
 * Each team's currency and rates, held in memory so that ingest values every record with no query:
 * a book is read once, then kept current by the changes announced as they commit (this process's
 * on CommitSignals, other instances' by NOTIFY), and read again when a change was missed (its
 * rates_revision skips one) or the book is older than its horizon.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { DEFAULT_CURRENCY } from '../domain/currencies.js';
import type { Rate, RateBook } from '../domain/rates.js';
import { postgresOnly, type Database, type Sql } from '../stores/sql.js';
import { RATES_CHANGED, RATES_CHANNEL, type RatesChange } from './changes.js';
import { ratesAt, rateVersionsFrom } from './repository.js';

/** A book holds the versions from this long before it was read (a record older than that reads its rate from the store). */
export const BOOK_HORIZON_MS = 6 * 3_600_000;

interface HeldBook extends RateBook {
  histories: Map<string, Rate[]>;
  revision: number;
  readAt: number;
}

export interface RateBooksOptions {
  /** With PostgreSQL: where other instances' changes are listened for. */
  pool?: pg.Pool;
  logger?: Logger;
  /** How often the revisions of the books held are compared with the store's (PostgreSQL), in ms. */
  checkMs?: number;
  clock?: () => number;
}

export class RateBooks {
  private readonly books = new Map<string, HeldBook>();
  /** Books being read; changes that arrive meanwhile wait in `arrived`, applied once it is read. */
  private readonly reading = new Map<string, Promise<HeldBook>>();
  private readonly arrived = new Map<string, RatesChange[]>();
  private readonly stops: (() => void)[] = [];
  private listening: Promise<void> | undefined;
  private client: pg.PoolClient | undefined;
  private stopped = false;
  private readonly clock: () => number;

  constructor(
    private readonly db: Database,
    private readonly options: RateBooksOptions = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.stops.push(db.signals.on(RATES_CHANGED, (payload) => this.apply(JSON.parse(payload) as RatesChange)));
  }

  /** Listens for other instances' changes, and compares revisions every `checkMs` (PostgreSQL only). */
  start(): void {
    const pool = this.options.pool;
    if (!pool || this.listening) return;
    this.listening = this.listen(pool);
    const timer = setInterval(() => void this.check().catch((err) => this.options.logger?.warn({ err }, 'rates: comparing revisions failed')), this.options.checkMs ?? 5_000);
    timer.unref();
    this.stops.push(() => clearInterval(timer));
  }

  async close(): Promise<void> {
    this.stopped = true;
    for (const stop of this.stops) stop();
    this.client?.emit('error', new Error('closing'));
    await this.listening;
  }

  /** The team's book: held, or read now (one transaction). */
  book(teamId: string): RateBook | Promise<RateBook> {
    const held = this.books.get(teamId);
    if (held && this.clock() - held.readAt < BOOK_HORIZON_MS) return held;
    return this.read(teamId);
  }

  /**
   * The team's versions from `from` on, as a book in `currency`, read now (one transaction): what
   * values a batch's records older than the book's horizon (an agent's buffer sent late).
   */
  bookFrom(teamId: string, from: number, currency: string): Promise<RateBook> {
    return this.db.transaction((sql) => readBookFrom(sql, teamId, from, currency));
  }

  private read(teamId: string): Promise<HeldBook> {
    let reading = this.reading.get(teamId);
    if (reading) return reading;
    reading = (async () => {
      try {
        const readAt = this.clock();
        const horizon = readAt - BOOK_HORIZON_MS;
        const { currency, revision, histories } = await this.db.transaction(async (sql) => {
          const team = await sql.get<{ currency: string; r: number | string }>('SELECT currency, rates_revision AS r FROM teams WHERE id = ?', [teamId]);
          const histories = new Map<string, Rate[]>();
          // Newest first: the versions after the horizon, then the one in effect at it.
          for (const version of await rateVersionsFrom(sql, teamId, horizon)) push(histories, version);
          for (const version of (await ratesAt(sql, teamId, horizon)).values()) push(histories, version);
          return { currency: team?.currency ?? DEFAULT_CURRENCY, revision: Number(team?.r ?? 0), histories };
        });
        const book: HeldBook = { currency, histories, horizon, revision, readAt };
        this.books.set(teamId, book);
        // No longer reading: what arrived meanwhile applies to the book now (apply would queue it again otherwise).
        const arrived = this.arrived.get(teamId) ?? [];
        this.reading.delete(teamId);
        this.arrived.delete(teamId);
        for (const change of arrived) this.apply(change);
        return book;
      } finally {
        this.reading.delete(teamId);
        this.arrived.delete(teamId);
      }
    })();
    this.reading.set(teamId, reading);
    return reading;
  }

  /** A committed change: applied to the book held when it is the next revision; else the book is read again when next used. */
  private apply(change: RatesChange): void {
    if (this.reading.has(change.team)) {
      (this.arrived.get(change.team) ?? this.arrived.set(change.team, []).get(change.team)!).push(change);
      return;
    }
    const book = this.books.get(change.team);
    if (!book || change.revision <= book.revision) return;
    if (change.revision !== book.revision + 1) {
      this.books.delete(change.team);
      return;
    }
    book.revision = change.revision;
    if (change.currency !== undefined) book.currency = change.currency;
    if (change.version) insert(book.histories, { ...change.version, source: 'team' });
  }

  /** Drops the books whose team's revision moved past what they applied (a NOTIFY missed while not listening). */
  private async check(): Promise<void> {
    if (this.books.size === 0) return;
    const teams = [...this.books.keys()];
    const rows = await this.db.all<{ id: string; r: number | string }>(postgresOnly('SELECT id, rates_revision AS r FROM teams WHERE id = ANY($1::text[])'), [teams]);
    for (const row of rows) {
      const book = this.books.get(row.id);
      if (book && Number(row.r) > book.revision) this.books.delete(row.id);
    }
  }

  private async listen(pool: pg.Pool): Promise<void> {
    while (!this.stopped) {
      try {
        this.client = await pool.connect();
        const ended = new Promise<void>((resolve) => this.client!.once('error', () => resolve()));
        this.client.on('notification', (message) => {
          if (message.channel === RATES_CHANNEL && message.payload) this.apply(JSON.parse(message.payload) as RatesChange);
        });
        await this.client.query(`LISTEN ${RATES_CHANNEL}`);
        // What changed while no one listened: every book is compared at once.
        await this.check();
        await ended;
      } catch (err) {
        if (!this.stopped) this.options.logger?.warn({ err }, 'rates: listening for changes failed; trying again');
      } finally {
        this.client?.removeAllListeners('notification');
        this.client?.release(true);
        this.client = undefined;
      }
      if (!this.stopped) await new Promise((resolve) => setTimeout(resolve, 1_000).unref());
    }
  }
}

/** The team's versions from `from` on (and the one in effect at it), as a book in `currency`. */
export async function readBookFrom(sql: Sql, teamId: string, from: number, currency: string): Promise<RateBook> {
  const histories = new Map<string, Rate[]>();
  // Newest first: the versions after `from`, then the one in effect at it.
  for (const version of await rateVersionsFrom(sql, teamId, from)) push(histories, version);
  for (const version of (await ratesAt(sql, teamId, from)).values()) push(histories, version);
  return { currency, histories, horizon: from };
}

function push(histories: Map<string, Rate[]>, version: Rate): void {
  const history = histories.get(version.asset);
  if (history) history.push(version);
  else histories.set(version.asset, [version]);
}

/** Inserts a version where its valid_from puts it (newest first). */
function insert(histories: Map<string, Rate[]>, version: Rate): void {
  const history = histories.get(version.asset) ?? [];
  const at = history.findIndex((v) => v.validFrom <= version.validFrom);
  if (at >= 0 && history[at]!.validFrom === version.validFrom) return;
  history.splice(at < 0 ? history.length : at, 0, version);
  histories.set(version.asset, history);
}
