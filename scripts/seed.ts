/**
 * npm run seed -- --events N --teams T --agents A --days D [--data-dir DIR]
 *
 * Fills the store with realistic synthetic events through the same code as ingest (record
 * validation and derivation, the ingest log's group commit with its (team, id) claims, and the
 * loader), in large chunks. Run it while the server is stopped: the embedded engine allows one process at a time.
 * Teams are named seed-1..seed-T (created when missing); their keys are printed when created.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { SchemaRegistry } from '../src/http/validation.js';
import { recordToRow, type EventRow } from '../src/ingest/records.js';
import { startIngestPipeline } from '../src/ingest/pipeline.js';
import { openStores } from '../src/stores/open.js';
import { SCHEMA_DIR } from '../src/paths.js';
import { createTeam, issueKey, TeamNameTaken, type KeySpec } from '../src/teams/repository.js';
import { sqliteDatabase } from '../src/stores/sql.js';
import { PolicyRevisions } from '../src/policies/revisions.js';

export interface SeedOptions {
  dataDir: string;
  events: number;
  teams: number;
  agents: number;
  days: number;
  /** Called with progress lines. */
  log?: (line: string) => void;
  /** Called after each chunk with the ingest log's backlog (records and bytes not yet loaded). */
  onBacklog?: (backlog: { rows: number; bytes: number }) => void;
}

export interface SeededTeam {
  id: string;
  name: string;
  /** Only for teams this run created. */
  apiKey?: string;
}

// Providers with the categories the ingest rules give them, weighted toward LLM spend.
const ENDPOINTS = [
  'https://api.openai.com/v1/chat/completions',
  'https://api.openai.com/v1/embeddings',
  'https://api.anthropic.com/v1/messages',
  'https://generativelanguage.googleapis.com/v1beta/models/gemini:generateContent',
  'https://api.mistral.ai/v1/chat/completions',
  'https://openrouter.ai/api/v1/chat/completions',
  'https://api.exa.ai/search',
  'https://api.tavily.com/search',
  'https://api.coingecko.com/api/v3/simple/price',
  'https://api.dune.com/api/v1/query/results',
  'https://api.replicate.com/v1/predictions',
  'https://api.elevenlabs.io/v1/text-to-speech',
  ...Array.from({ length: 28 }, (_, i) => `https://svc${i}.example.com/v1/resource`),
];
const NETWORKS = ['eip155:8453', 'eip155:8453', 'eip155:8453', 'eip155:84532', 'eip155:137', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'];

/** A tiny fast PRNG: 10 million records should not wait on crypto. */
function generator(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

export async function seedStore(options: SeedOptions): Promise<SeededTeam[]> {
  const log = options.log ?? (() => undefined);
  // Blocks as large as the chunks this script commits; no backlog bound (nothing else is waiting).
  const config = loadConfig({
    ...process.env,
    DATA_DIR: options.dataDir,
    LOAD_BLOCK_ROWS: '50000',
    INGEST_BACKLOG_MAX_ROWS: '1000000000',
    INGEST_BACKLOG_MAX_BYTES: String(1024 ** 4),
  });
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'warn' }, pino.destination(2));
  const { registry, events, loaderEvents } = await openStores(config, logger);
  const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
  // The service's write path (log, claims, loader), without policy evaluation.
  const ingest = startIngestPipeline({ config, registry, events, loaderEvents, schemas, logger, policyRevisions: new PolicyRevisions() }, { evaluate: false });
  const rnd = generator(options.events * 7 + options.teams);
  try {
    const teams: SeededTeam[] = [];
    for (let i = 1; i <= options.teams; i++) {
      const name = `seed-${i}`;
      try {
        const { team, key } = await createTeam(sqliteDatabase(registry), name);
        teams.push({ id: team.id, name, apiKey: key.apiKey });
      } catch (err) {
        if (!(err instanceof TeamNameTaken)) throw err;
        const row = registry.prepare('SELECT id FROM teams WHERE name = ?').get(name) as { id: string };
        teams.push({ id: row.id, name });
      }
    }
    const now = Date.now();
    const span = options.days * 86_400_000;
    const run = crypto.randomBytes(3).toString('hex');
    const chunk = 50_000;
    let pending: Promise<unknown> = Promise.resolve();
    // Event times first, sorted: records reach a real service roughly in time order, so parts hold
    // neighbouring hours, as they do in production (random order would spread every hour over
    // every part). Business hours are busier: a day-shaped density.
    const times = new Float64Array(options.events);
    for (let i = 0; i < times.length; i++) {
      let t = now - 60_000 - Math.floor(rnd() * span);
      if (rnd() < 0.4) t -= (t % 86_400_000) - (9 + Math.floor(rnd() * 9)) * 3_600_000;
      // Business hours of today may lie ahead: take yesterday's instead of piling them up at now.
      if (t > now - 60_000) t -= 86_400_000;
      times[i] = t;
    }
    times.sort();
    const started = performance.now();
    for (let done = 0; done < options.events; done += chunk) {
      const n = Math.min(chunk, options.events - done);
      const rows: EventRow[] = [];
      for (let i = 0; i < n; i++) {
        const t = times[done + i]!;
        const team = teams[Math.floor(rnd() * teams.length)]!;
        const micros = rnd() < 0.01 ? Math.floor(rnd() * 50_000_000) : Math.floor(rnd() * 20_000) + 1;
        const record = {
          id: `${run}${(done + i).toString(16).padStart(10, '0')}`,
          agent_id: `agent-${Math.floor(rnd() * rnd() * options.agents)}`,
          endpoint: ENDPOINTS[Math.floor(rnd() * rnd() * ENDPOINTS.length)]!,
          method: 'POST',
          amount: (micros / 1e6).toFixed(6),
          amount_raw: '0',
          asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
          network: NETWORKS[Math.floor(rnd() * NETWORKS.length)]!,
          scheme: 'exact',
          policy_evaluation: rnd() < 0.9 ? 'allowed' : rnd() < 0.6 ? 'flagged' : 'blocked',
          team: rnd() < 0.5 ? 'research' : null,
          status_code: 200,
          response_time_ms: Math.floor(rnd() * 900),
          created_at: t,
          tags: [],
          metadata: {},
        };
        const outcome = recordToRow(record, schemas, team.id, 'events', now);
        if (!outcome.ok) throw new Error(`generated an invalid record: ${JSON.stringify(outcome.errors)}`);
        rows.push(outcome.row);
      }
      // Build the next chunk while this one is written.
      await pending;
      options.onBacklog?.(ingest.freshness.backlog());
      pending = Promise.all(teams.map((team) => ingest.commit.write(team.id, rows.filter((r) => r.team_id === team.id))));
      if ((done / chunk) % 20 === 0) {
        const rate = done / ((performance.now() - started) / 1000);
        log(`${(done + n).toLocaleString('en-US')} / ${options.events.toLocaleString('en-US')} events (${Math.round(rate).toLocaleString('en-US')}/s)`);
      }
    }
    await pending;
    // Everything committed, then loaded into ClickHouse.
    while (!(await ingest.freshness.waitFor(ingest.log.endPos - 1, 60_000))) log(`loading: ${ingest.freshness.backlog().rows} records to go`);
    await ingest.close();
    const seconds = (performance.now() - started) / 1000;
    log(`seeded ${options.events.toLocaleString('en-US')} events in ${seconds.toFixed(0)} s (${Math.round(options.events / seconds).toLocaleString('en-US')}/s)`);
    return teams;
  } finally {
    await ingest.close();
    registry.close();
    await events.close();
    await loaderEvents.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: '1000000' },
      teams: { type: 'string', default: '3' },
      agents: { type: 'string', default: '50' },
      days: { type: 'string', default: '30' },
      'data-dir': { type: 'string' },
    },
  });
  const numbers = { events: Number(values.events), teams: Number(values.teams), agents: Number(values.agents), days: Number(values.days) };
  for (const [name, value] of Object.entries(numbers)) {
    if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number of at least 1`);
  }
  const dataDir = path.resolve(values['data-dir'] ?? loadConfig().dataDir);
  const teams = await seedStore({ dataDir, ...numbers, log: (line) => process.stderr.write(`${line}\n`) });
  process.stdout.write(`${JSON.stringify({ dataDir, teams }, null, 2)}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`seed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

/**
 * The store a benchmark reads: `dataDir` as given (seeded before with npm run seed), or a temporary
 * one seeded now with `events` events (3 teams, 50 agents, 30 days), removed by `cleanUp`.
 */
export async function benchmarkStore(label: string, dataDir: string | undefined, events: number): Promise<{ dataDir: string; cleanUp: () => void }> {
  if (dataDir) return { dataDir: path.resolve(dataDir), cleanUp: () => undefined };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `spendscope-${label}-`));
  console.log(`seeding ${events.toLocaleString('en-US')} events into ${dir} (npm run seed; pass --data-dir to reuse a seeded store)`);
  await seedStore({ dataDir: dir, events, teams: 3, agents: 50, days: 30, log: (line) => console.log(`  ${line}`) });
  return { dataDir: dir, cleanUp: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The team with the most events in a store, when its first event is, how many the store holds,
 * and a new key for that team. Run while the server is stopped (one process at a time).
 */
export async function largestTeam(dataDir: string, key: KeySpec): Promise<{ teamId: string; events: number; first: number; total: number; apiKey: string }> {
  const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
  const stores = await openStores(config, pino({ level: 'warn' }));
  try {
    const [top] = await stores.events.query<{ team_id: string; n: string; first: string }>(
      'SELECT team_id, count() AS n, toUnixTimestamp64Milli(min(event_time)) AS first FROM events GROUP BY team_id ORDER BY n DESC LIMIT 1',
    );
    const [all] = await stores.events.query<{ n: string }>('SELECT count() AS n FROM events');
    if (!top) throw new Error(`no events in ${dataDir}: run npm run seed first`);
    const apiKey = (await issueKey(sqliteDatabase(stores.registry), top.team_id, key)).apiKey;
    return { teamId: top.team_id, events: Number(top.n), first: Number(top.first), total: Number(all!.n), apiKey };
  } finally {
    stores.registry.close();
    await stores.events.close();
    await stores.loaderEvents.close();
  }
}
