/**
 * Who verifies what: one verifier per network (and one intake of records) across instances. On
 * PostgreSQL each is a session advisory lock held on a connection of its own, so an instance that
 * dies (or loses its connection) lets another take over at its next cycle. On SQLite there is one
 * instance: it holds them all.
 */
import type { Logger } from 'pino';
import type pg from 'pg';
import type { SharedStore } from '../stores/postgres.js';

export interface Leases {
  /** Whether this instance holds `name` now (taking it when free). */
  hold(name: string): Promise<boolean>;
  close(): Promise<void>;
}

export const soleLeases: Leases = { hold: async () => true, close: async () => {} };

export class AdvisoryLeases implements Leases {
  private client: pg.PoolClient | undefined;
  private held = new Set<string>();
  private broken = false;

  constructor(
    private readonly pool: SharedStore,
    private readonly logger: Logger,
  ) {}

  async hold(name: string): Promise<boolean> {
    try {
      const client = await this.session();
      if (this.held.has(name)) {
        await client.query('SELECT 1');
        return true;
      }
      const { rows } = await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS got', [`spendscope:settlements:${name}`]);
      if (rows[0]!.got) {
        this.held.add(name);
        this.logger.info({ lease: name }, 'settlements: this instance verifies ' + name);
      }
      return rows[0]!.got;
    } catch (err) {
      this.drop();
      throw err;
    }
  }

  private async session(): Promise<pg.PoolClient> {
    if (this.client && !this.broken) return this.client;
    this.drop();
    const client = await this.pool.connect();
    client.on('error', () => {
      // The locks went with the session: taken again (if free) at the next cycle.
      this.broken = true;
    });
    this.client = client;
    this.broken = false;
    return client;
  }

  private drop(): void {
    // Destroyed, not returned to the pool: the session (and its locks) ends now.
    this.client?.release(true);
    this.client = undefined;
    this.held.clear();
  }

  async close(): Promise<void> {
    this.drop();
  }
}
