import path from 'node:path';
import { pino } from 'pino';
import { createApp } from './app.js';
import { ConfigError, CREDENTIAL_VARIABLES, loadConfig } from './config.js';
import { SchemaRegistry } from './http/validation.js';
import { SCHEMA_DIR } from './paths.js';
import { EventStoreOpenError } from './stores/clickhouse.js';
import { SealedValueError, SecretsKeyError } from './stores/secrets.js';
import { openSharedStores, openStores } from './stores/open.js';
import { MigrationError } from './stores/migrations.js';
import { ancestorsHolding, eraseFromEnvironmentBlock, SecretInEnvironmentError } from './stores/process-environment.js';
import { bootstrapDefaultTeam } from './teams/bootstrap.js';
import { startServer } from './server.js';
import { assembleDeps } from './deps.js';
import { banner, jsonLogDestination, logDestination } from './http/log-format.js';
import { startBiServer } from './clickhouse-http/interface.js';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before any request runs: a read of /proc/self/environ must find no credential from here on.
  const erased = eraseFromEnvironmentBlock(CREDENTIAL_VARIABLES, CREDENTIAL_VARIABLES.map((name) => `${name}_FILE`));
  const destination = logDestination(config.logFormat) ?? jsonLogDestination();
  const logger = pino({ level: config.logLevel }, destination);
  if (erased.length > 0) logger.info({ variables: erased }, 'credentials erased from the process environment (/proc/<pid>/environ)');
  for (const holder of ancestorsHolding(CREDENTIAL_VARIABLES)) {
    logger.warn(
      { variables: holder.variables, ancestorPid: holder.pid, ancestorCommand: holder.command },
      `${holder.variables.join(', ')} still in the environment of process ${holder.pid} (${holder.command}), which started this one, where it cannot be erased: give ${holder.variables.map((name) => `${name}_FILE`).join(', ')} instead, or start node directly`,
    );
  }
  // Compile the API schemas before touching any store: a broken schema file must not half-start.
  const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
  const stores = config.database ? await openSharedStores({ ...config, database: config.database }, logger) : await openStores(config, logger);
  const deps = await assembleDeps(config, stores, schemas, logger);
  const bannerLines: string[] = [];
  await bootstrapDefaultTeam(deps.db, config, (line) => bannerLines.push(line));
  // Through the log's own stream: after the lines before it, whatever they wait in (the JSON log
  // is written in chunks).
  if (bannerLines.length > 0) destination.write(banner(bannerLines));
  const app = createApp(deps);

  const running = await startServer(app, deps);
  const bi = deps.clickhouseHttp && config.bi.port !== undefined ? await startBiServer(deps.clickhouseHttp, config, config.bi.port) : undefined;
  const stop = (signal: string) => {
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    // BI queries first: their engine sessions must end before the stores close.
    Promise.resolve(bi?.close())
      .then(() => running.shutdown())
      .then(
        () => {
          logger.info('stores closed; bye');
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'closing the stores failed');
          process.exit(1);
        },
      );
  };
  // Handlers first, then the line that says we listen: a signal sent on reading that line must
  // find them (without one, SIGTERM kills the process outright, stores open).
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  logger.info(
    { host: config.host, port: running.port, dataDir: config.dataDir, clickhouse: config.clickhouse.mode, registry: config.database ? 'postgres' : 'sqlite', biPort: bi?.port },
    `spendscope listening on http://${config.host}:${running.port}`,
  );
  if (bi) logger.info({ host: config.host, port: bi.port }, `ClickHouse HTTP interface for BI tools on http://${config.host}:${bi.port}`);
  // At once: whoever started the service waits for that line.
  logger.flush();
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof MigrationError || err instanceof EventStoreOpenError || err instanceof SecretsKeyError || err instanceof SealedValueError || err instanceof SecretInEnvironmentError) {
    process.stderr.write(`spendscope: ${err.message}\n`);
  } else {
    process.stderr.write(`spendscope: start-up failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  }
  process.exit(1);
});
