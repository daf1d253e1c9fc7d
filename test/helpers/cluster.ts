/**
 * Several instances of the built service on loopback, sharing one PostgreSQL (a fresh database of
 * the run's server) and one ClickHouse (the test ClickHouse server: the run's embedded engine behind
 * the protocol module, a database of its own), as a deployment behind a load balancer runs them.
 */
import crypto from 'node:crypto';
import { startClickHouseServer, type TestClickHouseServer } from './clickhouse-server.js';
import { freshDatabase } from './postgres.js';
import { startService, tempDir, type RunningService } from './processes.js';

export interface Cluster {
  key: string;
  databaseUrl: string;
  /** The environment every instance shares (a tool run beside them, such as team:create, takes it too). */
  env: Record<string, string>;
  instances: RunningService[];
  /** The ClickHouse server the instances share (a test may stop it and resume it). */
  clickhouse: TestClickHouseServer;
  /** Starts another instance on the same stores (a replacement after a kill). */
  start(extra?: Record<string, string>): Promise<RunningService>;
  stop(): Promise<void>;
}

export async function startCluster(label: string, count: number, extra: Record<string, string> = {}): Promise<Cluster> {
  const databaseUrl = await freshDatabase(label);
  const clickhouse = await startClickHouseServer();
  const key = `cluster-${label}-${crypto.randomBytes(8).toString('hex')}`;
  const env = {
    DATABASE_URL: databaseUrl,
    CLICKHOUSE_URL: clickhouse.url,
    CLICKHOUSE_DATABASE: `cluster_${label.replace(/\W/g, '_')}_${crypto.randomBytes(4).toString('hex')}`,
    SECRETS_KEY: crypto.randomBytes(32).toString('base64'),
    BOOTSTRAP_API_KEY: key,
    LOAD_INTERVAL_MS: '50',
    ...extra,
  };
  const all: RunningService[] = [];
  const start = async (more: Record<string, string> = {}) => {
    const service = await startService({ ...env, DATA_DIR: tempDir(`cluster-${label}`), ...more });
    all.push(service);
    return service;
  };
  // The first alone: it applies the migrations and makes the default team; the others at once.
  const instances = [await start()];
  instances.push(...(await Promise.all(Array.from({ length: count - 1 }, () => start()))));
  return {
    key,
    databaseUrl,
    env,
    instances,
    clickhouse,
    start,
    async stop() {
      for (const s of all) s.child.kill('SIGKILL');
      await Promise.all(all.map((s) => s.exited));
      await clickhouse.close();
    },
  };
}

/** One call to an instance with the cluster's key; the body parsed (undefined when empty). */
export async function call(service: RunningService, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(`${service.baseUrl}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}
