import type { Server } from 'node:http';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { createApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { SchemaRegistry } from './http/validation.js';
import { SCHEMA_DIR } from './paths.js';
import { createEventStore, ensureDatabase, type EventStore } from './stores/clickhouse.js';
import { MigrationError, migrateEventStore, migrateRegistry } from './stores/migrations.js';
import { openRegistry, type Registry } from './stores/sqlite.js';
import { bootstrapDefaultTeam } from './teams/bootstrap.js';

/** Opens both stores and brings their schemas up to date; closes what it opened on failure. */
export async function openStores(config: Config, logger: Logger): Promise<{ registry: Registry; events: EventStore }> {
  const registry = openRegistry(config.dataDir);
  let events: EventStore | undefined;
  try {
    const applied = migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
    if (applied.length) logger.info({ applied }, 'registry migrations applied');
    events = createEventStore(config.clickhouse);
    await ensureDatabase(events, config.clickhouse);
    const appliedCh = await migrateEventStore(events, path.join(SCHEMA_DIR, 'clickhouse'));
    if (appliedCh.length) logger.info({ applied: appliedCh }, 'ClickHouse migrations applied');
    return { registry, events };
  } catch (err) {
    registry.close();
    await events?.close().catch(() => undefined);
    throw err;
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel });
  // Compile the API schemas before touching any store: a broken schema file must not half-start.
  const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
  const { registry, events } = await openStores(config, logger);
  bootstrapDefaultTeam(registry, config, (line) => process.stdout.write(`${line}\n`));
  const app = createApp({ config, registry, events, logger, schemas });

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info(
    { host: config.host, port, dataDir: config.dataDir, clickhouse: config.clickhouse.mode },
    `spendscope listening on http://${config.host}:${port}`,
  );

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    // Past the deadline, stop waiting for slow clients; stores still close before exit.
    const deadline = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
    deadline.unref();
    server.close(async () => {
      clearTimeout(deadline);
      try {
        registry.close();
        await events.close();
        logger.info('stores closed; bye');
        process.exit(0);
      } catch (err) {
        logger.error({ err }, 'closing the stores failed');
        process.exit(1);
      }
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof MigrationError) {
    process.stderr.write(`spendscope: ${err.message}\n`);
  } else {
    process.stderr.write(`spendscope: start-up failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  }
  process.exit(1);
});
