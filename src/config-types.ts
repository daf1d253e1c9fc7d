/** The typed configuration's shape: what loadConfig (src/config.ts) builds from the environment. */
import type { SecretsKeys } from './domain/secrets-key.js';

/** How the log is written: JSON lines, readable lines, or readable at a terminal (src/http/log-format.ts). */
export type LogFormat = 'json' | 'pretty' | 'auto';

export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty', 'auto'];

/** Service defaults of the rate limits; 0 turns a kind of limit off for keys without their own rate. */
export interface RateDefaults {
  requestsPerSecond: number;
  recordsPerSecond: number;
}

/** What BI queries may use (src/clickhouse-http): per query, and the shares of keys, teams and the process. */
export interface BiLimits {
  maxExecutionSeconds: number;
  maxResultRows: number;
  maxResultBytes: number;
  /** Threads one BI query may use: fewer than the machine's cores leaves the rest to ingest and the API. */
  maxThreads: number;
  /** BI queries of one key (and the keys rotated from it) running at once. */
  concurrentQueriesPerKey: number;
  /** BI queries of one team running at once. */
  concurrentQueriesPerTeam: number;
  /** BI queries of the process running at once. */
  concurrentQueries: number;
  /** Memory one BI query may use. */
  maxMemoryBytes: number;
  /** Memory all running BI queries together may use: each query's bound is reserved from it. */
  totalMemoryBytes: number;
  /** How long a query waits for a place when the process is full before it is refused (10 s unless set). */
  queueWaitMs?: number;
}

/** Typed configuration, built once at start from the environment. */
export interface SharedDatabaseConfig {
  url: string;
  /** Connections of this instance's pool (DATABASE_POOL_MAX). */
  poolMax: number;
}

export interface Config {
  port: number;
  host: string;
  /** Where clients reach the API (links in webhook messages); by default http://HOST:PORT. */
  publicUrl: string;
  dataDir: string;
  clickhouse: ClickHouseConfig;
  /**
   * The shared store of several instances (DATABASE_URL, PostgreSQL): every piece of state the
   * instances share lives there instead of the SQLite registry under DATA_DIR. Undefined: SQLite.
   */
  database: SharedDatabaseConfig | undefined;
  logLevel: LogLevel;
  /** json, pretty, or auto: readable lines when stdout is a terminal (src/http/log-format.ts). */
  logFormat: LogFormat;
  /**
   * The key of team "default" at first start (BOOTSTRAP_API_KEY or _FILE), and which variable gave
   * it; bootstrapDefaultTeam takes it out of here, so the long-lived config never holds it.
   */
  bootstrapApiKey: { key: string; variable: string } | undefined;
  /**
   * The operator key (OPERATOR_API_KEY_FILE, or OPERATOR_API_KEY), kept only as its SHA-256: the
   * service owner's key for /api/v1/operator, apart from every team. Undefined: those routes are 404.
   */
  operatorKeyHash: Buffer | undefined;
  /** The keys of the secrets at rest (webhook secrets); openSecretBox takes them out of here. */
  secretsKeys: SecretsKeys;
  maxBodyBytes: number;
  /** Browser origins allowed to call the API (CORS); empty: none, ['*']: any. */
  corsOrigins: string[];
  shutdownTimeoutMs: number;
  ingest: IngestConfig;
  anomalies: AnomalyConfig;
  evaluation: EvaluationConfig;
  /** Per-key rates of keys that did not choose their own; 0 turns that limit off. */
  rateLimits: RateDefaults;
  http: HttpLimits;
  retention: Retention;
  webhooks: WebhookConfig;
  /** The chains records are checked against (CHAIN_RPC_URLS, src/config-chains.ts); undefined: none, nothing leaves the machine. */
  chains: ChainsConfig | undefined;
  bi: BiConfig;
}

/** ClickHouse's HTTP interface for BI tools (src/clickhouse-http), embedded engine only. */
export interface BiConfig {
  /** Its own port (at the root, as a ClickHouse server serves it); undefined: only /clickhouse on PORT. */
  port: number | undefined;
  limits: BiLimits;
}

/** Alert delivery to webhook endpoints (src/webhooks). */
export interface WebhookConfig {
  /** Endpoints may be http:// as well as https:// (local receivers). */
  allowHttp: boolean;
  /** Endpoints may resolve to loopback, private and link-local addresses (tests, local use). */
  allowPrivate: boolean;
  /** Delays between attempts of a delivery, in ms: one attempt more than delays. */
  retrySchedule: number[];
}

/** How long the event store keeps what (ClickHouse TTLs, by event time; 0: forever). */
export interface Retention {
  /** Raw events (`events`): what the SDK's queries and `/audit/:id` read. */
  eventsTtlDays: number;
  /** Rollups (`spend_*`): what analytics read. Never shorter than raw events. */
  rollupTtlDays: number;
}

/** What one connection may hold of the server (src/http/listen.ts). */
export interface HttpLimits {
  /** To receive a request's headers. */
  headersTimeoutMs: number;
  /** To receive a whole request, body included: a client sending its body slowly is cut off. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** A connection with no bytes either way for this long is closed (a client that stops reading). */
  idleTimeoutMs: number;
  /** Connections open at once. */
  maxConnections: number;
  /** Connections of one client (an IPv4 address, or an IPv6 /64) open at once; its next one is closed at once. */
  maxConnectionsPerClient: number;
  /**
   * New connections (the first request's headers not complete yet) open at once, of all clients
   * together. Past it, or past maxConnections, the oldest new connection of the client holding the
   * most new ones is closed to make room; a connection that has sent a request never is.
   */
  maxNewConnections: number;
  /** A new connection that has not sent its first request's headers within this is closed (408). */
  newConnectionTimeoutMs: number;
}

/** The ingest log and its loader (src/ingest). */
export interface IngestConfig {
  /** Ids are remembered for duplicate detection at least this many days (whole UTC days). */
  dedupWindowDays: number;
  /** Claims the dedup index's level-0 table takes before a worker writes it out as a sorted run (src/ingest/dedup). */
  dedupLevel0Keys: number;
  /** The loader inserts blocks of up to about this many records... */
  loadBlockRows: number;
  /** ...at the latest this long after the oldest unloaded record was acknowledged. */
  loadIntervalMs: number;
  /** Past this many unloaded records, or bytes of them, ingest answers 503. */
  backlogMaxRows: number;
  backlogMaxBytes: number;
  /** How long a read waits for the loader to reach what was acknowledged before it; then 503. */
  readWaitMs: number;
  /** Decimals of assets beyond the built-in stablecoins, for amount_raw (ASSET_DECIMALS=ETH:18,WBTC:8). */
  assetDecimals: Record<string, number>;
  /**
   * A group commit stops taking queued requests once it holds this many records (a request is
   * never split; one larger than this is a group alone): each group holds the event loop while it
   * claims, appends and evaluates, so its size bounds that pause.
   */
  groupMaxRows: number;
}

/** Bounds of policy evaluation (src/evaluation, src/policies). */
export interface EvaluationConfig {
  /** A team may have at most this many active policies (creating or re-activating one more is a 409). */
  maxActivePoliciesPerTeam: number;
  /**
   * Alerts one group commit opens or updates one by one, per team; further breaches and anomalies
   * of that team in the group are counted into one `alert_storm` alert of type `system`.
   */
  maxAlertsPerCommit: number;
}

/** Thresholds of the anomaly checks at ingest (src/evaluation/anomalies.ts). */
export interface AnomalyConfig {
  /** A payment above this many times the agent's recent average is a spike. */
  spikeFactor: number;
  /** How many recent payments make the average; no spike is raised before half of them are seen. */
  spikeBaseline: number;
  /** More calls than this by one agent to one URL within loopSeconds is a runaway loop. */
  loopCalls: number;
  loopSeconds: number;
  /** Payees an agent pays within this many hours of its first event are learned, not alerted. */
  newPayeeLearningHours: number;
}

/** Unset `url`: the embedded engine in `path`; set: a ClickHouse server over HTTP. */
export type ClickHouseConfig =
  | { mode: 'embedded'; path: string; database: string }
  | { mode: 'server'; url: string; user: string; password: string; database: string };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A configuration problem; the message names every offending variable. */

/** Reconciliation with the chain (docs/reconciliation.md); built by src/config-chains.ts. */
export interface ChainsConfig {
  /** CAIP-2 network -> JSON-RPC URL. */
  rpcUrls: Record<string, string>;
  /** Per configured network: blocks on top of a transaction's before it counts. */
  confirmations: Record<string, number>;
  /** How long a hash may be absent before its record is not_found, and a transfer waits for a record (SETTLEMENT_GRACE_S). */
  graceMs: number;
  /** How often each network is looked at (SETTLEMENT_POLL_MS). */
  pollMs: number;
  /** Blocks per eth_getLogs call (CHAIN_LOG_RANGE). */
  logRangeBlocks: number;
  /** JSON-RPC requests in flight per network (CHAIN_RPC_CONCURRENCY). */
  rpcConcurrency: number;
  /** A JSON-RPC request taking longer is abandoned (CHAIN_RPC_TIMEOUT_MS). */
  rpcTimeoutMs: number;
  /** Calls per JSON-RPC batch (CHAIN_RPC_BATCH). */
  rpcBatchSize: number;
  /** Checked transactions are looked at again until this many blocks are on top of theirs (CHAIN_REORG_DEPTH). */
  reorgDepth: number;
}
