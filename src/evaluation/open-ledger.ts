/**
 * Where evaluation keeps its state, chosen once: with one instance the SQLite registry holds the
 * policies and this process's memory the totals; with several, PostgreSQL holds both.
 */
import type { Logger } from 'pino';
import type { EventStore } from '../stores/clickhouse.js';
import { sqliteDatabase, type Database } from '../stores/sql.js';
import type { Registry } from '../stores/sqlite.js';
import type { TotalsLedger } from './ledger.js';
import { MemoryLedger } from './memory-ledger.js';
import { PostgresLedger } from './postgres-ledger.js';

/** `shared`: the store several instances share (then `registry` is not read); else the registry of this one. */
export function evaluationStores(
  registry: Registry | undefined,
  shared: Database | undefined,
  store: EventStore,
  logger: Logger,
  awaitLoaded: () => Promise<boolean>,
): { db: Database; ledger: TotalsLedger } {
  if (shared) return { db: shared, ledger: new PostgresLedger(store, logger, awaitLoaded) };
  if (!registry) throw new Error('an evaluator needs the registry or a shared store');
  return { db: sqliteDatabase(registry), ledger: new MemoryLedger(registry, store, logger, awaitLoaded) };
}
