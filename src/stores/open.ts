import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { SCHEMA_DIR } from '../paths.js';
import { createEventStore, ensureDatabase, type EventStore } from './clickhouse.js';
import { migrateEventStore, migrateRegistry } from './migrations.js';
import { applyRetention } from './retention.js';
import { openRegistry, type Registry } from './sqlite.js';

export interface Stores {
  registry: Registry;
  /** Reads (routes, evaluation) and migrations. */
  events: EventStore;
  /** The ingest loader's own session or client, so a read never queues behind an insert. */
  loaderEvents: EventStore;
}

/** Opens both stores and brings their schemas up to date; closes what it opened on failure. */
export async function openStores(config: Config, logger: Logger): Promise<Stores> {
  const registry = openRegistry(config.dataDir);
  let events: EventStore | undefined;
  let loaderEvents: EventStore | undefined;
  try {
    const applied = migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
    if (applied.length) logger.info({ applied }, 'registry migrations applied');
    events = createEventStore(config.clickhouse);
    await ensureDatabase(events, config.clickhouse);
    const appliedCh = await migrateEventStore(events, path.join(SCHEMA_DIR, 'clickhouse'));
    if (appliedCh.length) logger.info({ applied: appliedCh }, 'ClickHouse migrations applied');
    await applyRetention(events, config.retention, logger);
    loaderEvents = createEventStore(config.clickhouse);
    await ensureDatabase(loaderEvents, config.clickhouse);
    return { registry, events, loaderEvents };
  } catch (err) {
    registry.close();
    await events?.close().catch(() => undefined);
    await loaderEvents?.close().catch(() => undefined);
    throw err;
  }
}
