/**
 * The loader of the shared ingest log (src/ingest/shared-loader.ts): records acknowledged through
 * three instances reach ClickHouse once each, one instance loads at a time, and another takes over
 * within seconds when it dies, inserting again what it had recorded (ClickHouse drops the copy).
 */
import { expect } from 'chai';
import path from 'node:path';
import { AgentActivity } from '../../src/agents/activity.js';
import { PolicyRevisions } from '../../src/policies/revisions.js';
import { Evaluator } from '../../src/evaluation/evaluator.js';
import { GroupCommit, sharedCommits } from '../../src/ingest/group-commit.js';
import { Ingestor } from '../../src/ingest/ingestor.js';
import { insertBlock } from '../../src/ingest/blocks.js';
import { recordToRow } from '../../src/ingest/records.js';
import { rowBinaryOf } from '../../src/ingest/rowbinary.js';
import { SharedIngestLog } from '../../src/ingest/shared-log.js';
import { SharedFreshness } from '../../src/ingest/shared-freshness.js';
import { SharedLoader } from '../../src/ingest/shared-loader.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { migrateSharedStore } from '../../src/stores/migrations.js';
import { openSharedStore, type SharedStore } from '../../src/stores/postgres.js';
import { postgresDatabase, postgresOnly, type Database } from '../../src/stores/sql.js';
import { createPolicy, updatePolicy } from '../../src/policies/repository.js';
import { createTeam } from '../../src/teams/repository.js';
import { testEnv } from '../helpers/context.js';
import { freshDatabase } from '../helpers/postgres.js';
import { sdkId } from '../helpers/common.js';

interface Instance {
  db: Database;
  /** This instance's own: what it changes of policies, as its routes would. */
  revisions: PolicyRevisions;
  ingestor: Ingestor;
  freshness: SharedFreshness;
  loader: SharedLoader;
}

const ANOMALIES = { spikeFactor: 1e9, spikeBaseline: 1e9, loopCalls: 1e9, loopSeconds: 60, newPayeeLearningHours: 0 };

const record = () => ({ id: sdkId(), agent_id: 'bot', endpoint: 'https://api.example.com/v1/search', method: 'GET', amount: '0.25' });

describe('shared ingest log loader (PostgreSQL)', function () {
  this.timeout(120_000);
  const pools: SharedStore[] = [];
  const running: Instance[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map(async (i) => (i.freshness.stop(), i.loader.stop())));
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });

  /** Three instances on one fresh database, their loaders not started; `evaluate`: with policies, as the service runs. */
  async function threeInstances(evaluate = false): Promise<Instance[]> {
    const { deps } = testEnv();
    const url = await freshDatabase('loader');
    const instances: Instance[] = [];
    for (let n = 0; n < 3; n++) {
      const pool = openSharedStore(url);
      pools.push(pool);
      if (n === 0) await migrateSharedStore(pool, path.join(SCHEMA_DIR, 'postgres'));
      const db = postgresDatabase(pool);
      const log = new SharedIngestLog(7);
      await log.rollPartitions(db, Date.now());
      const freshness = new SharedFreshness(db, 100);
      await freshness.start();
      // Each instance its own process: it sees other instances' policy changes through the store alone.
      const revisions = new PolicyRevisions();
      const evaluator = evaluate ? new Evaluator({ shared: db, store: deps.events, anomalies: ANOMALIES, logger: deps.logger, awaitLoaded: () => freshness.waitFor(undefined, 10_000), revisions }) : undefined;
      const commit = new GroupCommit(sharedCommits(db), log, freshness, { maxRows: 1e9, maxBytes: 1024 ** 4 }, deps.logger, evaluator, new AgentActivity());
      const loader = new SharedLoader(pool, db, deps.loaderEvents, { blockRows: 50, intervalMs: 50 }, deps.logger, undefined, 100);
      const instance = { db, revisions, ingestor: new Ingestor(deps.schemas, commit), freshness, loader };
      instances.push(instance);
      running.push(instance);
    }
    return instances;
  }

  async function inClickHouse(teamId: string): Promise<{ events: number; ids: number; minutely: number; daily: number }> {
    const { deps } = testEnv();
    const [row] = await deps.events.query<{ events: string; ids: string; minutely: string; daily: string }>(
      `SELECT (SELECT count() FROM events WHERE team_id = {t:String}) AS events,
              (SELECT uniqExact(id) FROM events WHERE team_id = {t:String}) AS ids,
              (SELECT sum(events) FROM spend_minutely WHERE team_id = {t:String}) AS minutely,
              (SELECT sum(events) FROM spend_daily_by WHERE team_id = {t:String} AND dimension = 'agent') AS daily`,
      { t: teamId },
    );
    return { events: Number(row!.events), ids: Number(row!.ids), minutely: Number(row!.minutely), daily: Number(row!.daily) };
  }

  it('records sent through three instances (each batch twice) reach ClickHouse once each, every rollup equal, one instance loading at a time', async () => {
    const instances = await threeInstances();
    const { team } = await createTeam(instances[0]!.db, 'loaded');
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, instances.filter((i) => i.loader.isLoading).length)), 5);
    for (const i of instances) i.loader.start();
    const batches = Array.from({ length: 20 }, () => Array.from({ length: 15 }, record));
    const results = await Promise.all(batches.flatMap((b, n) => [instances[n % 3]!.ingestor.ingest(team.id, b, 'events'), instances[(n + 1) % 3]!.ingestor.ingest(team.id, b, 'events')]));
    expect(results.reduce((n, r) => n + r.ingested - r.duplicates, 0)).to.equal(300);
    // A read on any instance waits for what any instance acknowledged before it.
    expect(await instances[2]!.freshness.waitFor(team.id, 20_000)).to.equal(true);
    clearInterval(watch);
    expect(most, 'instances loading at once').to.equal(1);
    expect(await inClickHouse(team.id)).to.deep.equal({ events: 300, ids: 300, minutely: 300, daily: 300 });
    const left = await instances[0]!.db.get<{ chunks: number; blocks: number }>('SELECT (SELECT count(*) FROM ingest_chunks) AS chunks, (SELECT count(*) FROM ingest_blocks) AS blocks');
    expect({ chunks: Number(left!.chunks), blocks: Number(left!.blocks) }).to.deep.equal({ chunks: 0, blocks: 0 });
  });

  it('when the loading instance dies, another takes over within seconds, and a block it had inserted but not confirmed counts once', async () => {
    const instances = await threeInstances();
    const { deps } = testEnv();
    const { team } = await createTeam(instances[0]!.db, 'takeover');
    await instances[0]!.ingestor.ingest(team.id, Array.from({ length: 40 }, record), 'events');
    // What a loader that died between its insert and its confirmation leaves: a recorded block,
    // already in ClickHouse under its token.
    const db = instances[0]!.db;
    const chunks = await db.all<{ first_pos: number; last_pos: number; body: Buffer }>('SELECT first_pos, last_pos, body FROM ingest_chunks ORDER BY first_pos');
    const ranges = chunks.map((c) => [c.first_pos, c.last_pos] as [number, number]);
    const block = (await db.get<{ id: number }>("INSERT INTO ingest_blocks (origin, ranges, made_at, format, layout) VALUES (0, ?, 0, 'rowbinary2', 2) RETURNING id", [JSON.stringify(ranges)]))!.id;
    await db.run('UPDATE ingest_blocks SET origin = id WHERE id = ?', [block]);
    await db.run('UPDATE ingest_chunks SET block_id = ?', [block]);
    const { log_id: logId } = (await db.get<{ log_id: string }>('SELECT log_id FROM ingest_loader'))!;
    await insertBlock(deps.loaderEvents, logId, { firstPos: ranges[0]![0], lastPos: ranges.at(-1)![1], ranges, key: `b${block}` }, { format: 'rowbinary2', bytes: Buffer.concat(chunks.map((c) => c.body)) });

    for (const i of instances) i.loader.start();
    // The first of these found loading (the dying one may still say it is, until its stop settles).
    const holder = async (among = instances) => {
      for (let t = 0; t < 200; t++) {
        const found = among.find((i) => i.loader.isLoading);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('no instance took the loader lock');
    };
    const first = await holder();
    expect(await first.freshness.waitFor(team.id, 20_000)).to.equal(true);
    // kill -9 of the loading instance: its loader stops, its session ends (its lock with it).
    void first.loader.stop();
    await db.run("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid() AND database = (SELECT oid FROM pg_database WHERE datname = current_database())");
    const died = Date.now();
    const others = instances.filter((i) => i !== first);
    await others[0]!.ingestor.ingest(team.id, Array.from({ length: 30 }, record), 'events');
    const next = await holder(others);
    expect(Date.now() - died, 'takeover within seconds').to.be.below(5_000);
    expect(await others[1]!.freshness.waitFor(team.id, 20_000)).to.equal(true);
    expect(await inClickHouse(team.id)).to.deep.equal({ events: 70, ids: 70, minutely: 70, daily: 70 });
  });

  it('a RowBinary chunk whose rows cannot be told apart is set aside whole, the chunks beside it load; a loader of the release before cannot record a block', async () => {
    const [instance] = await threeInstances();
    const { deps } = testEnv();
    const { db } = instance!;
    const { team } = await createTeam(db, 'damaged');
    await instance!.ingestor.ingest(team.id, Array.from({ length: 10 }, record), 'events');
    // A chunk cut short, between two of the group commit's: one block takes all three.
    const rows = Array.from({ length: 3 }, (_, i) => {
      const made = recordToRow({ ...record(), id: `cut-${i}` }, deps.schemas, team.id, 'events', Date.now());
      if (!made.ok) throw new Error(JSON.stringify(made.errors));
      return made.row;
    });
    const { pos } = (await db.get<{ pos: number }>(postgresOnly("SELECT nextval('ingest_positions') AS pos")))!;
    const damaged = Buffer.from(rowBinaryOf(rows, pos).subarray(0, -3));
    await db.run(
      postgresOnly("INSERT INTO ingest_chunks (first_pos, last_pos, team_id, rows, bytes, committed_at, format, body) VALUES ($1, $2, $3, 3, $4, $5, 'rowbinary2', $6)"),
      [pos, pos + 2, team.id, damaged.length, Date.now(), damaged],
    );
    await instance!.ingestor.ingest(team.id, Array.from({ length: 10 }, record), 'events');
    // What the loader of the release before ran to record a block (no format): refused, so it
    // never sends RowBinary chunks to ClickHouse as TSV.
    const refused = await db.run("INSERT INTO ingest_blocks (origin, ranges, made_at) VALUES (0, '[]', 0)").then(() => undefined, (err: Error) => err);
    expect(refused?.message).to.match(/null value in column "format"/);
    // The release before values: its loader records blocks without a layout, its writer RowBinary chunks
    // without values; both refused, so it neither sets rowbinary2 records aside nor writes unvalued ones.
    const oldLoader = await db.run("INSERT INTO ingest_blocks (origin, ranges, made_at, format) VALUES (0, '[]', 0, 'rowbinary2')").then(() => undefined, (err: Error) => err);
    expect(oldLoader?.message).to.match(/null value in column "layout"/);
    const oldWriter = await db
      .run(postgresOnly("INSERT INTO ingest_chunks (first_pos, last_pos, team_id, rows, bytes, committed_at, format, body) VALUES (-5, -5, $1, 1, 1, 0, 'rowbinary', $2)"), [team.id, Buffer.from('x')])
      .then(() => undefined, (err: Error) => err);
    expect(oldWriter?.message).to.match(/ingest_chunks_current_format/);

    instance!.loader.start();
    expect(await instance!.freshness.waitFor(team.id, 20_000)).to.equal(true);
    expect(await inClickHouse(team.id)).to.deep.equal({ events: 20, ids: 20, minutely: 20, daily: 20 });
    const rejects = await db.all<{ pos: number; team_id: string; id: string; format: string; rows: number; line: Buffer }>('SELECT pos, team_id, id, format, rows, line FROM ingest_rejects');
    expect(rejects.map((r) => [Number(r.pos), r.team_id, r.id, r.format, r.rows])).to.deep.equal([[pos, team.id, '', 'rowbinary2', 3]]);
    expect(rejects[0]!.line.equals(damaged)).to.equal(true);
    expect(instance!.loader.isFailing).to.equal(false);
  });

  it('a daily total stays the sum of the day while its policy is turned off and on, through an instance that never saw it on', async () => {
    const [a, b, c] = await threeInstances(true);
    for (const i of [a!, b!, c!]) i.loader.start();
    const { team } = await createTeam(a!.db, 'scope-gap');
    const paid = (n: number) => Array.from({ length: n }, () => ({ ...record(), amount: '1' }));
    const policy = await a!.db.transaction((sql) =>
      createPolicy(sql, team.id, { name: 'ten a day', agents: [], limits: [{ kind: 'daily', amount: '10' }], action: 'flag', active: true, timezone: null }, a!.revisions),
    );
    await a!.ingestor.ingest(team.id, paid(2), 'events');
    await b!.ingestor.ingest(team.id, paid(1), 'events');
    await a!.db.transaction((sql) => updatePolicy(sql, team.id, policy.id, { active: false }, a!.revisions));
    // c starts now: it has never seen the policy on, and counts nothing while it is off.
    await c!.ingestor.ingest(team.id, paid(3), 'events');
    await a!.db.transaction((sql) => updatePolicy(sql, team.id, policy.id, { active: true }, a!.revisions));
    await a!.ingestor.ingest(team.id, paid(1), 'events');
    const total = await a!.db.get<{ spent: string }>("SELECT spent::text AS spent FROM spend_totals WHERE team_id = ? AND subject = 'bot' AND window_kind = 'd:UTC'", [team.id]);
    // 2 + 1 + 3 + 1: the row left unread was deleted, and read again from ClickHouse (4 without).
    expect(total!.spent).to.equal((7n * 10n ** 18n).toString());
  });
});
