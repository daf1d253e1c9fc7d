import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseKey, type SecretsKey, type SecretsKeys } from './domain/secrets-key.js';

import { LOG_FORMATS, LOG_LEVELS, type AnomalyConfig, type BiConfig, type ClickHouseConfig, type Config, type EvaluationConfig, type HttpLimits, type IngestConfig, type LogFormat, type LogLevel, type RateDefaults, type Retention, type SharedDatabaseConfig, type WebhookConfig } from './config-types.js';
import { chainsSetting } from './config-chains.js';

export * from './config-types.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/**
 * The variables that carry credentials, each also given as the path of a file holding it (NAME_FILE):
 * read once, then taken out of the environment (and, by main.ts, out of the kernel's copy of it).
 */
export const CREDENTIAL_VARIABLES = ['BOOTSTRAP_API_KEY', 'OPERATOR_API_KEY', 'SECRETS_KEY', 'SECRETS_KEY_PREVIOUS', 'CLICKHOUSE_URL', 'CLICKHOUSE_PASSWORD', 'DATABASE_URL'] as const;
type CredentialVariable = (typeof CREDENTIAL_VARIABLES)[number];

/**
 * ASSET_DECIMALS: "ETH:18,WBTC:8,0xabc…:6". Symbols are matched in any case, 0x addresses lower-cased,
 * other addresses (Solana mints) as written. At most 18 decimals: amounts keep 18 fractional digits.
 */
function assetDecimalsSetting(raw: string, problems: string[]): Record<string, number> {
  const table: Record<string, number> = {};
  for (const entry of raw.split(',').map((e) => e.trim()).filter(Boolean)) {
    const match = /^([^\s:]{1,128}):(\d{1,2})$/.exec(entry);
    if (!match || Number(match[2]) > 18) {
      problems.push(`ASSET_DECIMALS: "${entry}" must be <asset>:<decimals from 0 to 18>, e.g. ETH:18`);
      continue;
    }
    const asset = match[1]!;
    const key = asset.startsWith('0x') ? asset.toLowerCase() : asset.length <= 16 ? asset.toUpperCase() : asset;
    table[key] = Number(match[2]);
  }
  return table;
}

/** "5s,5m,30m,2h": delays in ms, s, m or h, each from 1 ms to 24 h; at most 20 of them. */
function durationList(name: string, raw: string, problems: string[]): number[] {
  const units: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
  const delays: number[] = [];
  const entries = raw.split(',').map((e) => e.trim());
  for (const entry of entries) {
    const match = /^(\d{1,9})(ms|s|m|h)$/.exec(entry);
    const ms = match ? Number(match[1]) * units[match[2]!]! : NaN;
    if (!(ms >= 1 && ms <= 86_400_000)) {
      problems.push(`${name}: "${entry}" must be a delay like 500ms, 5s, 5m or 2h (at most 24h)`);
      return [];
    }
    delays.push(ms);
  }
  if (delays.length > 20) problems.push(`${name}: at most 20 delays, got ${delays.length}`);
  return delays;
}

/** Reads and validates the environment; throws ConfigError naming each bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    if (/^\d+$/.test(raw) && Number(raw) >= min && Number(raw) <= max) return Number(raw);
    problems.push(`${name}: must be a whole number from ${min} to ${max}, got "${raw}"`);
    return fallback;
  };
  const text = (name: string, fallback: string, check?: (v: string) => string | null): string => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const problem = check?.(raw);
    if (problem) {
      problems.push(`${name}: ${problem}`);
      return fallback;
    }
    return raw;
  };

  const port = integer('PORT', 8080, 0, 65535);
  const host = text('HOST', '127.0.0.1', (v) => (/\s/.test(v) ? 'must be a host name or address' : null));
  const publicUrl = text('PUBLIC_URL', `http://${host.includes(':') ? `[${host}]` : host}:${port}`, (v) => {
    try {
      return ['http:', 'https:'].includes(new URL(v).protocol) ? null : 'must be an http:// or https:// URL';
    } catch {
      return 'must be an http:// or https:// URL';
    }
  }).replace(/\/+$/, '');
  const dataDir = path.resolve(text('DATA_DIR', './data'));
  const logLevel = text('LOG_LEVEL', 'info', (v) =>
    (LOG_LEVELS as readonly string[]).includes(v) ? null : `must be one of ${LOG_LEVELS.join(', ')}`,
  ) as LogLevel;
  const logFormat = text('LOG_FORMAT', 'auto', (v) =>
    (LOG_FORMATS as readonly string[]).includes(v) ? null : `must be one of ${LOG_FORMATS.join(', ')}`,
  ) as LogFormat;
  // 8 MiB: a batch of 1,000 SDK records of up to 8 KB each (about 10,000 as the SDK usually sends them).
  const maxBodyBytes = integer('MAX_BODY_BYTES', 8 * 1024 * 1024, 1024, 64 * 1024 * 1024);
  const shutdownTimeoutMs = integer('SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000);
  const corsOrigins = (env.CORS_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean);
  for (const origin of corsOrigins) {
    // An origin is scheme://host[:port], exactly as a browser sends it: no path, no trailing slash.
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) problems.push(`CORS_ORIGINS: "${origin}" must be an origin like https://app.example.com (or *)`);
  }
  const ingest: IngestConfig = {
    dedupWindowDays: integer('DEDUP_WINDOW_DAYS', 7, 1, 365),
    // Ids kept in the in-memory level-0 map before it is written out as a sorted run: about 40 MB.
    dedupLevel0Keys: integer('DEDUP_LEVEL0_KEYS', 250_000, 100, 10_000_000),
    // Larger blocks write fewer part files per record; a read that waits for fresh records wakes the loader.
    loadBlockRows: integer('LOAD_BLOCK_ROWS', 25_000, 1, 1_000_000),
    loadIntervalMs: integer('LOAD_INTERVAL_MS', 500, 1, 60_000),
    // About a minute of peak load (50,000 records/s of about 600 bytes).
    backlogMaxRows: integer('INGEST_BACKLOG_MAX_ROWS', 3_000_000, 1, 1_000_000_000),
    backlogMaxBytes: integer('INGEST_BACKLOG_MAX_BYTES', 2 * 1024 ** 3, 1024, 1024 ** 4),
    readWaitMs: integer('READ_WAIT_MS', 10_000, 1, 600_000),
    assetDecimals: assetDecimalsSetting(env.ASSET_DECIMALS ?? '', problems),
    // Each group pays one commit and one WAL flush; a larger group only holds the event loop longer.
    groupMaxRows: integer('INGEST_GROUP_MAX_ROWS', 2_000, 1, 1_000_000),
  };
  const anomalies: AnomalyConfig = {
    spikeFactor: integer('ANOMALY_SPIKE_FACTOR', 10, 2, 1_000_000),
    spikeBaseline: integer('ANOMALY_SPIKE_BASELINE', 50, 2, 10_000),
    loopCalls: integer('ANOMALY_LOOP_CALLS', 300, 2, 10_000_000),
    loopSeconds: integer('ANOMALY_LOOP_SECONDS', 60, 1, 86_400),
    newPayeeLearningHours: integer('ANOMALY_NEW_PAYEE_LEARNING_HOURS', 24, 0, 8_760),
  };
  const evaluation: EvaluationConfig = {
    maxActivePoliciesPerTeam: integer('MAX_ACTIVE_POLICIES_PER_TEAM', 1_000, 1, 1_000_000),
    maxAlertsPerCommit: integer('MAX_ALERTS_PER_COMMIT', 100, 1, 100_000),
  };
  // Far above what one small machine ingests, so the SDK and the ingest benchmark are never limited.
  const rateLimits: RateDefaults = {
    requestsPerSecond: integer('RATE_LIMIT_REQUESTS_PER_SECOND', 1_000, 0, 1_000_000),
    recordsPerSecond: integer('RATE_LIMIT_RECORDS_PER_SECOND', 100_000, 0, 100_000_000),
  };
  const maxConnections = integer('HTTP_MAX_CONNECTIONS', 1_024, 1, 1_000_000);
  const headersTimeoutMs = integer('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const httpLimits: HttpLimits = {
    headersTimeoutMs,
    requestTimeoutMs: integer('HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
    keepAliveTimeoutMs: integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
    idleTimeoutMs: integer('HTTP_IDLE_TIMEOUT_MS', 60_000, 100, 3_600_000),
    maxConnections,
    // An eighth: one client cannot take the server; it takes eight at their share.
    maxConnectionsPerClient: integer('HTTP_MAX_CONNECTIONS_PER_CLIENT', Math.max(1, Math.floor(maxConnections / 8)), 1, 1_000_000),
    // A quarter: connections that have sent nothing useful yet never crowd out those serving requests.
    maxNewConnections: integer('HTTP_MAX_NEW_CONNECTIONS', Math.max(1, Math.floor(maxConnections / 4)), 1, 1_000_000),
    // A client sends its headers with the connection's first packets; 3 s allows for a slow network.
    newConnectionTimeoutMs: integer('HTTP_NEW_CONNECTION_TIMEOUT_MS', Math.min(3_000, headersTimeoutMs), 100, 600_000),
  };
  for (const [name, value] of [['HTTP_MAX_CONNECTIONS_PER_CLIENT', httpLimits.maxConnectionsPerClient], ['HTTP_MAX_NEW_CONNECTIONS', httpLimits.maxNewConnections]] as const) {
    if (value > maxConnections) problems.push(`${name}: must not exceed HTTP_MAX_CONNECTIONS (${maxConnections}), got ${value}`);
  }
  if (httpLimits.newConnectionTimeoutMs > headersTimeoutMs) {
    problems.push(`HTTP_NEW_CONNECTION_TIMEOUT_MS: must not exceed HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs}), got ${httpLimits.newConnectionTimeoutMs}`);
  }
  // A read may wait READ_WAIT_MS for the loader without a byte on the wire: the socket must outlast it.
  if (httpLimits.idleTimeoutMs <= ingest.readWaitMs) {
    problems.push(`HTTP_IDLE_TIMEOUT_MS: must be longer than READ_WAIT_MS (${ingest.readWaitMs}), got ${httpLimits.idleTimeoutMs}`);
  }
  // Node refuses a headers timeout longer than the request's: the headers are part of the request.
  if (httpLimits.headersTimeoutMs > httpLimits.requestTimeoutMs) {
    problems.push(`HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS (${httpLimits.requestTimeoutMs}), got ${httpLimits.headersTimeoutMs}`);
  }
  const retention: Retention = {
    eventsTtlDays: integer('EVENTS_TTL_DAYS', 400, 0, 36_500),
    rollupTtlDays: integer('ROLLUP_TTL_DAYS', 0, 0, 36_500),
  };
  // Rollups shorter than raw events would make analytics disagree with the records they count.
  if (retention.rollupTtlDays > 0 && (retention.eventsTtlDays === 0 || retention.rollupTtlDays < retention.eventsTtlDays)) {
    problems.push(`ROLLUP_TTL_DAYS: must be 0 (forever) or at least EVENTS_TTL_DAYS (${retention.eventsTtlDays || 'forever'}), got ${retention.rollupTtlDays}`);
  }
  /**
   * A credential: NAME, or the content of the file NAME_FILE names (Docker secrets; one trailing
   * newline dropped), never both. Both are removed from `env` once read, so child processes and
   * workers do not inherit them; the kernel's copy (/proc/self/environ) is main.ts's to erase.
   */
  const credential = (name: CredentialVariable): { value: string; variable: string } | undefined => {
    const direct = env[name];
    const file = env[`${name}_FILE`];
    delete env[name];
    delete env[`${name}_FILE`];
    if (direct && file) {
      problems.push(`${name}, ${name}_FILE: set one of them, not both`);
      return undefined;
    }
    if (file) {
      try {
        return { value: fs.readFileSync(file, 'utf8').replace(/\r?\n$/, ''), variable: `${name}_FILE` };
      } catch (err) {
        problems.push(`${name}_FILE: cannot read "${file}" (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
        return undefined;
      }
    }
    return direct ? { value: direct, variable: name } : undefined;
  };
  const flag = (name: string): boolean => {
    const raw = env[name]?.trim().toLowerCase();
    if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
    if (raw === '1' || raw === 'true') return true;
    problems.push(`${name}: must be 1 or 0 (true or false), got "${env[name]}"`);
    return false;
  };
  const webhooks: WebhookConfig = {
    allowHttp: flag('WEBHOOK_ALLOW_HTTP'),
    allowPrivate: flag('WEBHOOK_ALLOW_PRIVATE'),
    retrySchedule: durationList('WEBHOOK_RETRY_SCHEDULE', env.WEBHOOK_RETRY_SCHEDULE ?? '5s,5m,30m,2h,5h,10h,10h', problems),
  };
  const bootstrap = credential('BOOTSTRAP_API_KEY');
  // A bootstrap key is a real credential: short or spaced values are mistakes, not keys.
  if (bootstrap && (bootstrap.value.length < 16 || bootstrap.value.length > 256 || /\s/.test(bootstrap.value))) {
    problems.push(`${bootstrap.variable}: must be 16 to 256 characters without spaces`);
  }
  const operator = credential('OPERATOR_API_KEY');
  // It reaches every team's standing: a long random value, as `openssl rand -hex 32` makes.
  if (operator && (operator.value.length < 32 || operator.value.length > 256 || /\s/.test(operator.value))) {
    problems.push(`${operator.variable}: must be 32 to 256 characters without spaces (openssl rand -hex 32)`);
  }
  if (operator && bootstrap && operator.value === bootstrap.value) problems.push(`${operator.variable}: must differ from ${bootstrap.variable}`);
  const secretsKey = (name: 'SECRETS_KEY' | 'SECRETS_KEY_PREVIOUS'): SecretsKey | undefined => {
    const given = credential(name);
    const bytes = given && parseKey(given.value);
    if (given && !bytes) problems.push(`${given.variable}: must be the base64 of 32 random bytes (openssl rand -base64 32)`);
    return bytes && { bytes, source: given.variable };
  };
  const secretsKeys: SecretsKeys = { current: secretsKey('SECRETS_KEY'), previous: secretsKey('SECRETS_KEY_PREVIOUS') };
  const database = text('CLICKHOUSE_DATABASE', 'spendscope', (v) =>
    /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(v) ? null : 'must be a plain identifier (letters, digits, _)',
  );
  /** A URL credential of one of `protocols`; '' when not given or bad (a problem names its variable). */
  const urlOf = (given: { value: string; variable: string } | undefined, protocols: string[], expected: string): string => {
    if (!given) return '';
    try {
      if (protocols.includes(new URL(given.value).protocol)) return given.value;
    } catch {
      // Named below, as a protocol that does not fit is.
    }
    problems.push(`${given.variable}: must be ${expected}`);
    return '';
  };
  // A URL may carry a user and password (http://user:password@host:8123), so it is a credential too.
  const url = urlOf(credential('CLICKHOUSE_URL'), ['http:', 'https:'], 'an http:// or https:// URL');
  const clickhousePassword = credential('CLICKHOUSE_PASSWORD')?.value ?? '';

  const clickhouse: ClickHouseConfig = url
    ? {
        mode: 'server',
        url,
        user: text('CLICKHOUSE_USER', 'default'),
        password: clickhousePassword,
        database,
      }
    : { mode: 'embedded', path: path.join(dataDir, 'clickhouse'), database };

  const databaseUrl = urlOf(credential('DATABASE_URL'), ['postgres:', 'postgresql:'], 'a postgres:// URL');
  const shared: SharedDatabaseConfig | undefined = databaseUrl ? { url: databaseUrl, poolMax: integer('DATABASE_POOL_MAX', 10, 2, 1000) } : undefined;
  if (shared && clickhouse.mode === 'embedded') {
    problems.push('DATABASE_URL: needs CLICKHOUSE_URL as well: instances that share PostgreSQL must share one ClickHouse server (the embedded engine belongs to one process)');
  }
  if (shared && !secretsKeys.current) {
    problems.push('DATABASE_URL: needs SECRETS_KEY (or SECRETS_KEY_FILE), the same on every instance: each would otherwise make its own key and could not open the webhook secrets the others sealed');
  }

  const biPort = env.BI_HTTP_PORT?.trim() ? integer('BI_HTTP_PORT', 0, 0, 65535) : undefined;
  if (biPort !== undefined && clickhouse.mode === 'server') {
    problems.push("BI_HTTP_PORT: the BI interface serves the embedded engine; with CLICKHOUSE_URL, BI tools connect to that server (its users and row policies scope them)");
  }
  // Each running BI query holds a thread of libuv's pool until it ends, and the loader and the
  // service's reads need one each: at most the pool less two (UV_THREADPOOL_SIZE, read by libuv
  // from the process's environment when the pool starts; 4 unless set, 8 under npm start and Docker).
  const threadPool = Math.min(1024, Math.max(1, Number(process.env.UV_THREADPOOL_SIZE) || 4));
  const biConcurrentQueries = integer('BI_MAX_CONCURRENT_QUERIES', Math.max(1, Math.min(4, threadPool - 2)), 1, 256);
  if (biConcurrentQueries > Math.max(1, threadPool - 2)) {
    problems.push(
      `BI_MAX_CONCURRENT_QUERIES: at most ${Math.max(1, threadPool - 2)} with UV_THREADPOOL_SIZE ${threadPool} (each running BI query holds a pool thread; the loader and reads need two); raise UV_THREADPOOL_SIZE in the environment`,
    );
  }
  // A quarter of the machine's memory for all BI queries together; each query's bound is carved from it.
  const biTotalMemory = integer('BI_MAX_TOTAL_MEMORY_BYTES', Math.floor(os.totalmem() / 4), 64 * 1024 ** 2, Number.MAX_SAFE_INTEGER);
  const bi: BiConfig = {
    port: biPort,
    limits: {
      maxExecutionSeconds: integer('BI_MAX_EXECUTION_TIME_S', 300, 1, 86_400),
      maxResultRows: integer('BI_MAX_RESULT_ROWS', 500_000_000, 1, Number.MAX_SAFE_INTEGER),
      maxResultBytes: integer('BI_MAX_RESULT_BYTES', 100 * 1024 ** 3, 1, Number.MAX_SAFE_INTEGER),
      // Half the machine's cores (at least one): a heavy BI query leaves the rest to ingest and the API.
      maxThreads: integer('BI_MAX_THREADS', Math.max(1, Math.floor(os.availableParallelism() / 2)), 1, 256),
      concurrentQueriesPerKey: integer('BI_CONCURRENT_QUERIES_PER_KEY', 2, 1, 64),
      concurrentQueriesPerTeam: integer('BI_CONCURRENT_QUERIES_PER_TEAM', 4, 1, 256),
      concurrentQueries: biConcurrentQueries,
      totalMemoryBytes: biTotalMemory,
      // By default as much as lets every query of the process run with a whole bound at once (4 GiB at most).
      maxMemoryBytes: integer('BI_MAX_MEMORY_BYTES', Math.min(4 * 1024 ** 3, Math.floor(biTotalMemory / biConcurrentQueries)), 64 * 1024 ** 2, Number.MAX_SAFE_INTEGER),
    },
  };
  if (bi.limits.totalMemoryBytes < bi.limits.maxMemoryBytes / 4) {
    problems.push('BI_MAX_TOTAL_MEMORY_BYTES: must be at least a quarter of BI_MAX_MEMORY_BYTES, or no BI query could start');
  }

  const chains = chainsSetting(env, problems, integer);

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    port,
    host,
    publicUrl,
    dataDir,
    clickhouse,
    database: shared,
    logLevel,
    logFormat,
    bootstrapApiKey: bootstrap && { key: bootstrap.value, variable: bootstrap.variable },
    operatorKeyHash: operator && crypto.createHash('sha256').update(operator.value).digest(),
    secretsKeys,
    maxBodyBytes,
    corsOrigins,
    shutdownTimeoutMs,
    ingest,
    anomalies,
    evaluation,
    rateLimits,
    http: httpLimits,
    retention,
    webhooks,
    chains,
    bi,
  };
}
