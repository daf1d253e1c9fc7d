/** How a change to a team's rates or currency reaches the books in memory: this process's at commit, other instances' by NOTIFY. */
import type { Rate } from '../domain/rates.js';
import { postgresOnly, type Sql } from '../stores/sql.js';

/** Announced on the database's CommitSignals once a change commits; the subject is a RatesChange as JSON. */
export const RATES_CHANGED = 'rates.changed';
/** The PostgreSQL channel other instances listen on, with the same payload. */
export const RATES_CHANNEL = 'spendscope_rates';

/** What changed: a version added, or the team's currency; `revision` is the team's rates_revision after it. */
export interface RatesChange {
  team: string;
  revision: number;
  version?: Omit<Rate, 'source'>;
  currency?: string;
}

/** In the change's transaction, after its write: raises the team's rates_revision and announces the change once it commits. */
export async function announceRatesChange(sql: Sql, teamId: string, change: Pick<RatesChange, 'version' | 'currency'>): Promise<void> {
  const row = await sql.get<{ r: number | string }>('UPDATE teams SET rates_revision = rates_revision + 1 WHERE id = ? RETURNING rates_revision AS r', [teamId]);
  const payload = JSON.stringify({ team: teamId, revision: Number(row?.r ?? 0), ...change } satisfies RatesChange);
  // NOTIFY is delivered when the transaction commits, and only then.
  if (sql.dialect === 'postgres') await sql.run(postgresOnly(`SELECT pg_notify('${RATES_CHANNEL}', $1)`), [payload]);
  sql.afterCommit(() => sql.signals.emit(RATES_CHANGED, payload));
}
