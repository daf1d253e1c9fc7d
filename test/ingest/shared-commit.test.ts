/**
 * The group commit over a store several instances share (issue 30): records and authorizations
 * sent to three instances at once are counted against one set of running totals, exactly. Each
 * instance here is what a process runs (its own pool, log, evaluator and group commit), three of
 * them in this process; on SQLite the three are one, as one process is all SQLite allows.
 */
import { expect } from 'chai';
import { AgentActivity } from '../../src/agents/activity.js';
import { voidAuthorization } from '../../src/authorizations/capture.js';
import { PolicyRevisions } from '../../src/policies/revisions.js';
import { Evaluator } from '../../src/evaluation/evaluator.js';
import { Freshness } from '../../src/ingest/freshness.js';
import { GroupCommit, sharedCommits, type CommitStore } from '../../src/ingest/group-commit.js';
import { Ingestor } from '../../src/ingest/ingestor.js';
import { IngestLog } from '../../src/ingest/log.js';
import { SharedIngestLog } from '../../src/ingest/shared-log.js';
import { createPolicy } from '../../src/policies/repository.js';
import { postgresOnly, run, type Database } from '../../src/stores/sql.js';
import { LogUnavailable } from '../../src/domain/errors.js';
import { knownError } from '../../src/http/errors.js';
import type { Registry } from '../../src/stores/sqlite.js';
import { createTeam } from '../../src/teams/repository.js';
import { testEnv, registryCommits } from '../helpers/context.js';
import { forEachDialect } from '../helpers/dialects.js';
import { sdkId } from '../helpers/common.js';
import { authorizationRequest } from '../helpers/authorizations.js';

const ANOMALIES = { spikeFactor: 1e9, spikeBaseline: 1e9, loopCalls: 1e9, loopSeconds: 60, newPayeeLearningHours: 0 };
const LIMITS = { maxRows: 1e9, maxBytes: 1024 ** 4 };
/** Small groups: many transactions of the three instances overlap. */
const GROUPS = { groupMaxDecisions: 5, groupMaxRows: 20 };

interface Instance {
  commit: GroupCommit;
  ingestor: Ingestor;
}

/** This process's policy changes (the tests make them here, as the routes do), seen by its instances' evaluators. */
const revisions = new PolicyRevisions();

/** An instance of the service's write path on `db`, as src/ingest/pipeline.ts assembles it. */
async function instanceOn(db: Database, shared: boolean): Promise<Instance> {
  const { deps } = testEnv();
  let commit: GroupCommit;
  if (shared) {
    const log = new SharedIngestLog(7);
    await log.rollPartitions(db, Date.now());
    // ClickHouse holds none of these teams' records: nothing to wait for.
    const evaluator = new Evaluator({ shared: db, store: deps.events, anomalies: ANOMALIES, logger: deps.logger, awaitLoaded: async () => true, revisions });
    commit = new GroupCommit(sharedCommits(db), log, new Freshness(0), LIMITS, deps.logger, evaluator, new AgentActivity(), undefined, GROUPS);
  } else {
    const registry = db.origin as Registry;
    const evaluator = new Evaluator({ registry, store: deps.events, anomalies: ANOMALIES, logger: deps.logger, awaitLoaded: async () => true, revisions });
    commit = new GroupCommit(registryCommits(registry), new IngestLog(registry, 7), new Freshness(0), LIMITS, deps.logger, evaluator, new AgentActivity(), undefined, GROUPS);
  }
  return { commit, ingestor: new Ingestor(deps.schemas, commit) };
}



describe('group commit on a shared store, on SQLite and PostgreSQL', function () {
  this.timeout(120_000);
  forEachDialect('shared-commit', (open, dialect) => {
    const shared = dialect === 'postgres';
    const threeInstances = async (): Promise<{ db: Database; instances: Instance[] }> => {
      const { db, another } = await open();
      const dbs = shared ? [db, another(), another()] : [db, db, db];
      const one = shared ? undefined : await instanceOn(db, false);
      const instances = await Promise.all(dbs.map((d) => (one ? Promise.resolve(one) : instanceOn(d, true))));
      return { db, instances };
    };

    it('300 authorizations at once over three instances, against a block limit that fits 50, approve exactly 50', async () => {
      const { db, instances } = await threeInstances();
      const { team } = await createTeam(db, 'ledger');
      await db.transaction((sql) => createPolicy(sql, team.id, { name: 'five a day', agents: [], limits: [{ kind: 'daily', amount: '5' }], action: 'block', active: true, timezone: null }, revisions));
      // The agent's total for today exists before the race (a first record), as on any busy day.
      await instances[0]!.ingestor.ingest(team.id, [{ id: sdkId(), agent_id: 'bot', endpoint: 'https://api.example.com/v1/search', method: 'GET', amount: '0' }], 'events');
      const rows = await Promise.all(Array.from({ length: 300 }, (_, i) => instances[i % 3]!.commit.authorize(authorizationRequest(team.id, '0.1'))));
      const approved = rows.filter((r) => r.decision === 'approved');
      expect(approved).to.have.length(50);
      // Without the totals' row locks each instance approves against its own view: 150.
      const stored = await db.get<{ n: number | string }>("SELECT count(*) AS n FROM authorizations WHERE team_id = ? AND state = 'held'", [team.id]);
      expect(Number(stored!.n)).to.equal(50);
      // The declines name the limit, with the holds of the 50 counted.
      const declined = rows.find((r) => r.decision === 'declined')!;
      expect(JSON.parse(declined.reasons)[0]).to.include('holds of 5');
    });

    it('records of one agent crossing a daily limit through three instances at once raise exactly one alert, and every batch sent twice counts once', async () => {
      const { db, instances } = await threeInstances();
      const { team } = await createTeam(db, 'one-alert');
      await db.transaction((sql) => createPolicy(sql, team.id, { name: 'ten a day', agents: [], limits: [{ kind: 'daily', amount: '10' }], action: 'flag', active: true, timezone: null }, revisions));
      const now = Date.now();
      const batches = Array.from({ length: 30 }, () =>
        Array.from({ length: 10 }, () => ({ id: sdkId(), agent_id: 'bot', endpoint: 'https://api.example.com/v1/search', method: 'GET', amount: '0.05', timestamp: new Date(now - 1000).toISOString() })),
      );
      // Each batch to one instance, and again to the next one (a client retrying after a timeout).
      const results = await Promise.all(
        batches.flatMap((batch, b) => [instances[b % 3]!.ingestor.ingest(team.id, batch, 'events'), instances[(b + 1) % 3]!.ingestor.ingest(team.id, batch, 'events')]),
      );
      for (const r of results) expect(r.errors).to.deep.equal([]);
      const stored = results.reduce((n, r) => n + r.ingested - r.duplicates, 0);
      expect(stored, 'each record stored once').to.equal(300);
      expect(results.reduce((n, r) => n + r.duplicates, 0)).to.equal(300);
      // 300 x 0.05 = 15 crosses 10 once: one open alert, whichever instance saw the crossing.
      const alerts = await db.all<{ kind: string; count: number | string }>("SELECT kind, count FROM alerts WHERE team_id = ? AND kind = 'daily'", [team.id]);
      expect(alerts, JSON.stringify(alerts)).to.have.length(1);
      expect(results.reduce((n, r) => n + r.alerts_created, 0)).to.equal(1);
      if (shared) {
        const total = await db.get<{ spent: string }>("SELECT spent::text AS spent FROM spend_totals WHERE team_id = ? AND subject = 'bot' AND window_kind = 'd:UTC'", [team.id]);
        expect(total!.spent).to.equal((15n * 10n ** 18n).toString());
      }
    });

    it('the same batches in other orders in two instances\' groups (retries sent elsewhere) are stored once, with no deadlock between the groups', async () => {
      const { db, instances } = await threeInstances();
      const { team } = await createTeam(db, 'crossed');
      const { logLines } = testEnv();
      const linesBefore = logLines.length;
      const batch = () => Array.from({ length: 10 }, () => ({ id: sdkId(), agent_id: 'bot', endpoint: 'https://api.example.com/v1/search', method: 'GET', amount: '0.01' }));
      let stored = 0;
      for (let round = 0; round < 10; round++) {
        const [x, y] = [batch(), batch()];
        // One group of [x, y] on the first instance, one of [y, x] on the second, at once.
        const results = await Promise.all([
          instances[0]!.ingestor.ingest(team.id, x, 'events'),
          instances[0]!.ingestor.ingest(team.id, y, 'events'),
          instances[1]!.ingestor.ingest(team.id, y, 'events'),
          instances[1]!.ingestor.ingest(team.id, x, 'events'),
        ]);
        stored += results.reduce((n, r) => n + r.ingested - r.duplicates, 0);
      }
      expect(stored, 'each record stored once').to.equal(200);
      // Without one lock order over the whole group, each round's two groups deadlock (40P01), and
      // one is rolled back and tried again after PostgreSQL's deadlock_timeout.
      const retried = logLines.slice(linesBefore).filter((l) => l.msg === 'group commit rolled back; trying it again');
      expect(retried.map((l) => (l.err as { code?: string } | undefined)?.code)).to.deep.equal([]);
    });

    it('a hold is captured or voided once: a record and a void of one authorization sent to two instances at once; after five rounds the totals hold each record once and no hold', async () => {
      const { db, instances } = await threeInstances();
      const { team } = await createTeam(db, 'holds');
      await db.transaction((sql) => createPolicy(sql, team.id, { name: 'five a day', agents: [], limits: [{ kind: 'daily', amount: '5' }], action: 'block', active: true, timezone: null }, revisions));
      for (let round = 0; round < 5; round++) {
        const auth = await instances[0]!.commit.authorize(authorizationRequest(team.id, '1'));
        expect(auth.decision).to.equal('approved');
        const paid = { id: sdkId(), agent_id: 'bot', endpoint: 'https://api.example.com/v1/search', method: 'GET', amount: '1', authorization_id: auth.id };
        const [captured, voided] = await Promise.all([
          instances[1]!.ingestor.ingest(team.id, [paid], 'events'),
          instances[2]!.commit.serialized(function* (now) {
            return (yield* voidAuthorization(team.id, auth.id, now)).released;
          }),
        ]);
        expect(captured.ingested).to.equal(1);
        const after = await db.get<{ state: string; captured_by: string | null }>('SELECT state, captured_by FROM authorizations WHERE id = ?', [auth.id]);
        // Exactly one of the two took the hold.
        expect(voided ? 'voided' : 'captured').to.equal(after!.state);
        if (!voided) expect(after!.captured_by).to.equal(paid.id);
        // Either way the hold is gone: 1 spent (captured) or nothing (voided), never both.
      }
      // What the five rounds left: five paid records, each counted once as spend (a record whose
      // hold was voided first counts as a payment without one), and no hold. The sixth
      // authorization sees exactly that (its check lists spent and held).
      const check = await instances[1]!.commit.authorize(authorizationRequest(team.id, '0.5'));
      const [stored] = JSON.parse(check.checks) as [string, string, string, string, number, number, string, string, string][];
      expect(stored![7], 'spent').to.equal('5');
      expect(stored![8], 'held').to.equal('0');
    });
  });
});

describe('group commit on PostgreSQL: a group that keeps meeting other writers', function () {
  this.timeout(60_000);
  forEachDialect('contended', (open, dialect) => {
    if (dialect !== 'postgres') return;
    it('is answered 503 with Retry-After: 1 after its tries and leaves the instance ready (the log is writable); fewer failures than tries are absorbed', async () => {
      const { db } = await open();
      const { team } = await createTeam(db, 'contended');
      const real = sharedCommits(db);
      // PostgreSQL's own deadlock error, raised inside the group's transaction: what a group meeting
      // another instance's locks gets, the first `failing` times.
      let failing = 3;
      const store: CommitStore = {
        retryable: real.retryable,
        transact: (steps) =>
          real.transact(function* () {
            if (failing-- > 0) yield* run(postgresOnly("DO $$ BEGIN RAISE EXCEPTION 'as a deadlock' USING ERRCODE = 'deadlock_detected'; END $$"));
            return yield* steps();
          }),
      };
      const log = new SharedIngestLog(7);
      await log.rollPartitions(db, Date.now());
      const { deps } = testEnv();
      const commit = new GroupCommit(store, log, new Freshness(0), LIMITS, deps.logger);
      const ingestor = new Ingestor(deps.schemas, commit);
      const record = () => ({ id: sdkId(), agent_id: 'bot', endpoint: 'https://api.example.com/v1/search', method: 'GET', amount: '1' });
      const refused = await ingestor.ingest(team.id, [record()], 'events').then(
        () => undefined,
        (err: unknown) => err,
      );
      // The engine's error, which the HTTP edge answers as a 503 with Retry-After: 1.
      expect(refused).to.be.instanceOf(LogUnavailable);
      expect(knownError(refused)!.status).to.equal(503);
      expect(knownError(refused)!.headers).to.deep.equal({ 'Retry-After': '1' });
      expect(commit.lastWriteFailure, 'readiness').to.equal(undefined);
      failing = 2;
      expect((await ingestor.ingest(team.id, [record()], 'events')).ingested).to.equal(1);
      expect(Number((await db.get<{ n: string }>('SELECT count(*) AS n FROM ingest_claims WHERE team_id = ?', [team.id]))!.n)).to.equal(1);
    });
  });
});
