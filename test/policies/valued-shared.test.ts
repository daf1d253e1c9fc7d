/**
 * Policies in value over instances sharing PostgreSQL: three instances of the write path in this
 * process (each its own pool, rate books listening for NOTIFY, evaluator, group commit and
 * ingestor, as src/deps.ts and src/ingest/pipeline.ts assemble one), one team's records and
 * authorizations in USDC, EURC (through an EUR rate) and ETH (a team rate) sent to all three at
 * once, counted against one budget in USD, exactly; a rate changed on one instance values the
 * others' later records; an asset without a rate is declined everywhere.
 */
import BigNumber from 'bignumber.js';
import { expect } from 'chai';
import { AgentActivity } from '../../src/agents/activity.js';
import type { AuthorizationRow, StoredCheck } from '../../src/authorizations/repository.js';
import { Evaluator } from '../../src/evaluation/evaluator.js';
import { GroupCommit, sharedCommits } from '../../src/ingest/group-commit.js';
import { Ingestor, type IngestResult } from '../../src/ingest/ingestor.js';
import { SharedFreshness } from '../../src/ingest/shared-freshness.js';
import { SharedIngestLog } from '../../src/ingest/shared-log.js';
import { SharedLoader } from '../../src/ingest/shared-loader.js';
import { createPolicy } from '../../src/policies/repository.js';
import { PolicyRevisions } from '../../src/policies/revisions.js';
import type { Policy } from '../../src/policies/policy.js';
import { RateBooks } from '../../src/rates/books.js';
import { addRateVersion } from '../../src/rates/repository.js';
import type { SharedStore } from '../../src/stores/postgres.js';
import type { Database } from '../../src/stores/sql.js';
import { createTeam, lockTeam } from '../../src/teams/repository.js';
import { sdkId } from '../helpers/common.js';
import { testEnv } from '../helpers/context.js';
import { forEachDialect } from '../helpers/dialects.js';
import { authorizationRequest } from '../helpers/authorizations.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WETH = '0xc02aaa39b223fe8d0a5e5c4f27ead9083c756cc2';
const ANOMALIES = { spikeFactor: 1e9, spikeBaseline: 1e9, loopCalls: 1e9, loopSeconds: 60, newPayeeLearningHours: 0 };
const LIMITS = { maxRows: 1e9, maxBytes: 1024 ** 4 };
/** Small groups: many transactions of the three instances overlap, records and decisions in one group. */
const GROUPS = { groupMaxDecisions: 5, groupMaxRows: 6 };
/** How long another instance may take to apply a rate change (NOTIFY is delivered in milliseconds). */
const NOTIFY_WAIT_MS = 5_000;

interface Instance {
  db: Database;
  /** This instance's own, as a process has: it hears of other instances' policy changes through the store. */
  revisions: PolicyRevisions;
  rates: RateBooks;
  freshness: SharedFreshness;
  commit: GroupCommit;
  ingestor: Ingestor;
}

/** An instance of the service's write path on its own pool, as src/deps.ts and startSharedIngestPipeline assemble it. */
async function instanceOn(db: Database): Promise<Instance> {
  const { deps } = testEnv();
  const pool = db.origin as SharedStore;
  // Other instances' changes by NOTIFY alone within these tests: the periodic revision check is
  // made rare, so a change that arrives in time arrived by NOTIFY (or on this instance's commit).
  const rates = new RateBooks(db, { pool, logger: deps.logger, checkMs: 600_000 });
  rates.start();
  const log = new SharedIngestLog(7);
  await log.rollPartitions(db, Date.now());
  const freshness = new SharedFreshness(db, 100);
  await freshness.start();
  const revisions = new PolicyRevisions();
  const evaluator = new Evaluator({ shared: db, store: deps.events, anomalies: ANOMALIES, logger: deps.logger, awaitLoaded: () => freshness.waitFor(undefined, 10_000), revisions, rates });
  const commit = new GroupCommit(sharedCommits(db), log, freshness, LIMITS, deps.logger, evaluator, new AgentActivity(), undefined, GROUPS);
  // No configured decimals (the service's ASSET_DECIMALS): an amount_raw in ETH takes its decimals from the team's rate.
  const ingestor = new Ingestor(deps.schemas, commit, undefined, {}, rates);
  return { db, revisions, rates, freshness, commit, ingestor };
}

/** One unit of each asset in USD, as the team's rates below make it. */
const USD_PER = { USDC: '1', EURC: '1.08', ETH: '3000' } as const;
type Asset = keyof typeof USD_PER;

/** The exact value of an amount at a rate: half-even at 18 places, as values are stored. */
const valued = (amount: BigNumber.Value, rate: BigNumber.Value) => new BigNumber(amount).times(rate).decimalPlaces(18, BigNumber.ROUND_HALF_EVEN);

const sum = (values: readonly BigNumber[]) => values.reduce((a, b) => a.plus(b), new BigNumber(0));


const paid = (fields: Record<string, unknown>) => ({ id: sdkId(), agent_id: 'bot', endpoint: 'https://api.example.com/v1/search', method: 'GET', ...fields });

/** The rate versions the team starts with (from a day ago), set on `db` as PUT /rates does (the team locked first). */
async function setRate(db: Database, teamId: string, asset: string, value: string, validFrom: number, decimals: number | null): Promise<void> {
  await db.transaction(async (sql) => {
    await lockTeam(sql, teamId);
    await addRateVersion(sql, teamId, { asset, value, currency: 'USD', validFrom, decimals }, Date.now());
  });
}

async function blockPolicy(instance: Instance, teamId: string, limits: Policy['limits'], name = 'research 100 a day'): Promise<Policy> {
  return instance.db.transaction((sql) =>
    createPolicy(sql, teamId, { name, agents: ['bot'], limits, action: 'block', active: true, timezone: null, currency: 'USD' }, instance.revisions),
  );
}

/** The policy's check in an authorization's stored checks (see StoredCheck): spent and held as decision saw them. */
function checkOf(row: AuthorizationRow, policyId: string, kind: string): { spent: BigNumber; held: BigNumber } {
  const found = (JSON.parse(row.checks) as StoredCheck[]).find((c) => c[0] === policyId && c[3] === kind);
  expect(found, `${row.id}'s checks: ${row.checks}`).to.not.equal(undefined);
  return { spent: new BigNumber(found![7]), held: new BigNumber(found![8]) };
}

/** Waits (bounded) until `done` holds of the values `read` gives; returns the last value read. */
async function within<T>(ms: number, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    value = await read();
  }
  return value;
}

describe('policies in value over three instances sharing PostgreSQL', function () {
  this.timeout(120_000);
  forEachDialect('valued-shared', (open, dialect) => {
    if (dialect !== 'postgres') return;
    let instances: Instance[] = [];
    let loader: SharedLoader | undefined;

    before(async function () {
      // A day's window must hold every record of a test: not run in the minute either side of UTC midnight.
      const now = Date.now();
      const sinceMidnight = now % DAY;
      const wait = sinceMidnight < 60_000 ? 60_000 - sinceMidnight : sinceMidnight > DAY - 60_000 ? DAY - sinceMidnight + 60_000 : 0;
      this.timeout(wait + 60_000);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const { db, another } = await open();
      instances = await Promise.all([db, another(), another()].map(instanceOn));
      // The records reach ClickHouse as in a deployment: one instance's loader (the others would wait for its lock).
      const { deps } = testEnv();
      loader = new SharedLoader(db.origin as SharedStore, db, deps.loaderEvents, { blockRows: 500, intervalMs: 50 }, deps.logger, undefined, 100);
      loader.start();
    });

    after(async () => {
      await loader?.stop();
      await Promise.all(
        instances.map(async (i) => {
          await i.commit.close();
          i.freshness.stop();
          await i.rates.close();
        }),
      );
    });

    /** The team's records in ClickHouse once every chunk acknowledged is loaded: value and currency by id. */
    async function storedValues(teamId: string): Promise<Record<string, { value: string | null; currency: string }>> {
      expect(await instances[0]!.freshness.waitFor(teamId, 20_000), 'loaded into ClickHouse').to.equal(true);
      const rows = await testEnv().deps.events.query<{ id: string; value: string | null; currency: string }>(
        'SELECT id, toString(value) AS value, toString(currency) AS currency FROM events WHERE team_id = {t:String}',
        { t: teamId },
      );
      expect(rows.length, 'each record once').to.equal(new Set(rows.map((r) => r.id)).size);
      return Object.fromEntries(rows.map((r) => [r.id, { value: r.value === null ? null : new BigNumber(r.value).toFixed(), currency: r.currency }]));
    }

    /** The agent's running total of the team's one value scope (a day, in USD), as the shared ledger keeps it. */
    async function runningTotal(teamId: string): Promise<BigNumber> {
      const rows = await instances[0]!.db.all<{ window_kind: string; spent: string | null }>("SELECT window_kind, spent::text AS spent FROM spend_totals WHERE team_id = ? AND subject = 'bot'", [teamId]);
      expect(rows.map((r) => r.window_kind), 'the scopes counted').to.have.length(1);
      expect(rows[0]!.window_kind).to.match(/^v:USD\|/);
      // Kept in units of 10^-18.
      return new BigNumber(rows[0]!.spent!).shiftedBy(-18);
    }

    it('a day budget of 100 USD crossed by USDC, EURC and ETH records and authorizations sent to three instances at once: the total is exact, one breach alert, no approval past 100', async () => {
      const [first] = instances;
      const { team } = await createTeam(first!.db, 'valued-race');
      const since = Date.now() - DAY;
      await setRate(first!.db, team.id, 'EUR', USD_PER.EURC, since, null);
      await setRate(first!.db, team.id, 'ETH', USD_PER.ETH, since, 18);
      const policy = await blockPolicy(first!, team.id, [{ kind: 'daily', amount: '100' }]);
      // An endpoint that takes alert.opened: each alert opened, on any instance, queues one delivery (no dispatcher runs here).
      await first!.db.run("INSERT INTO webhook_endpoints (id, team_id, url, events, format, created_at, updated_at) VALUES (?, ?, 'https://hooks.example.com/alerts', '[\"alert.opened\"]', 'slack', ?, ?)", [
        `whk_${sdkId()}`, team.id, Date.now(), Date.now(),
      ]);

      // 48 records (16 batches of 3, each batch to one instance): USDC, EURC, ETH and ETH as amount_raw (decimals from the rate).
      const expected = new Map<string, BigNumber>();
      const batches = Array.from({ length: 16 }, (_, b) =>
        Array.from({ length: 3 }, (_, k) => {
          const i = b * 3 + k;
          const asset: Asset = (['USDC', 'EURC', 'ETH', 'ETH'] as const)[i % 4]!;
          const step = new BigNumber(i);
          const amount = asset === 'USDC' ? step.times('0.01').plus('2.17') : asset === 'EURC' ? step.times('0.001').plus('2.345') : step.times('0.000001').plus('0.000987');
          const record = i % 4 === 3 ? paid({ asset: 'eth', amount_raw: amount.shiftedBy(18).toFixed() }) : paid({ asset, amount: amount.toFixed() });
          expected.set(record.id, valued(amount, USD_PER[asset]));
          return record;
        }),
      );
      const recordsWorth = sum([...expected.values()]);
      expect(recordsWorth.gt(100), `the records alone cross the budget (${recordsWorth.toFixed()})`).to.equal(true);
      // 30 authorizations of about 4.5 USD each, 10 to each instance.
      const asks = Array.from({ length: 30 }, (_, j) => {
        const asset: Asset = (['USDC', 'EURC', 'ETH'] as const)[j % 3]!;
        const amount = asset === 'USDC' ? '4.5' : asset === 'EURC' ? '4' : '0.0015';
        return { asset, amount, worth: valued(amount, USD_PER[asset]) };
      });

      // All at once, interleaved: records and decisions of one agent meet in the groups of three instances.
      const sending: Promise<IngestResult>[] = [];
      const deciding: Promise<AuthorizationRow>[] = [];
      for (let n = 0; n < Math.max(batches.length, asks.length); n++) {
        if (n < batches.length) sending.push(instances[n % 3]!.ingestor.ingest(team.id, batches[n]!, 'events'));
        if (n < asks.length) deciding.push(instances[(n + 1) % 3]!.commit.authorize(authorizationRequest(team.id, asks[n]!.amount, asks[n]!.asset)));
      }
      const [results, decisions] = await Promise.all([Promise.all(sending), Promise.all(deciding)]);

      for (const r of results) expect({ errors: r.errors, warnings: r.warnings }).to.deep.equal({ errors: [], warnings: [] });
      expect(results.reduce((n, r) => n + r.ingested - r.duplicates, 0), 'records stored').to.equal(48);

      // Each record valued at acknowledgement in USD, exactly; the running total is their exact sum.
      const stored = await storedValues(team.id);
      expect(stored).to.deep.equal(Object.fromEntries([...expected].map(([id, v]) => [id, { value: v.toFixed(), currency: 'USD' }])));
      expect((await runningTotal(team.id)).toFixed(), 'the running total').to.equal(recordsWorth.toFixed());

      // Approved authorizations, in the order they were decided (each holds more than the one
      // before saw held): each saw the holds of exactly those before it, and none went past 100.
      const approved = decisions
        .map((row, j) => ({ row, worth: asks[j]!.worth, ...checkOf(row, policy.id, 'daily') }))
        .filter((d) => d.row.decision === 'approved')
        .sort((a, b) => (a.held.comparedTo(b.held) ?? 0) || (a.spent.comparedTo(b.spent) ?? 0));
      const declined = decisions.filter((row) => row.decision === 'declined');
      expect(approved.length + declined.length, 'every authorization decided').to.equal(30);
      expect(approved, 'some approved').to.not.have.length(0);
      expect(declined, 'some declined').to.not.have.length(0);
      let heldBefore = new BigNumber(0);
      let spentBefore = new BigNumber(0);
      for (const d of approved) {
        expect(d.held.toFixed(), `${d.row.id}: held as decided`).to.equal(heldBefore.toFixed());
        expect(d.spent.gte(spentBefore), `${d.row.id}: spent ${d.spent.toFixed()} after ${spentBefore.toFixed()}`).to.equal(true);
        const reached = d.spent.plus(d.held).plus(d.worth);
        expect(reached.lte(100), `${d.row.id}: spent ${d.spent.toFixed()} + held ${d.held.toFixed()} + ${d.worth.toFixed()} = ${reached.toFixed()}`).to.equal(true);
        heldBefore = heldBefore.plus(d.worth);
        spentBefore = d.spent;
      }
      // A decline names the daily limit, its spent and held in value.
      for (const row of declined) {
        const { spent, held } = checkOf(row, policy.id, 'daily');
        const worth = asks[decisions.indexOf(row)]!.worth;
        expect(spent.plus(held).plus(worth).gt(100), `${row.id} declined at ${spent.toFixed()} + ${held.toFixed()} + ${worth.toFixed()}`).to.equal(true);
        expect(JSON.parse(row.reasons)).to.deep.equal([
          `Declined by policy "research 100 a day": spend of ${spent.toFixed()} and holds of ${held.toFixed()} plus ${row.amount}${worth.eq(row.amount) ? '' : ` (worth ${worth.toFixed()} USD)`} would exceed its daily limit of 100`,
        ]);
      }
      const holds = await first!.db.all<{ id: string }>("SELECT id FROM authorizations WHERE team_id = ? AND state = 'held'", [team.id]);
      expect(holds.map((h) => h.id).sort()).to.deep.equal(approved.map((d) => d.row.id).sort());

      // One breach alert: the policy's day, opened once whichever instance met it first.
      const alerts = await first!.db.all<{ kind: string; policy_id: string | null; status: string; observed: string; limit_value: string }>(
        'SELECT kind, policy_id, status, observed, limit_value FROM alerts WHERE team_id = ?',
        [team.id],
      );
      expect(alerts.map((a) => [a.kind, a.policy_id, a.status, a.limit_value]), JSON.stringify(alerts)).to.deep.equal([['daily', policy.id, 'open', '100']]);
      expect(new BigNumber(alerts[0]!.observed).gt(100), `observed ${alerts[0]!.observed}`).to.equal(true);
      const opened = await first!.db.get<{ n: number | string }>("SELECT count(*) AS n FROM webhook_deliveries WHERE team_id = ? AND event_type = 'alert.opened'", [team.id]);
      expect(Number(opened!.n), 'alert.opened events').to.equal(1);
      expect(results.reduce((n, r) => n + r.alerts_created, 0), 'alerts opened by records').to.be.at.most(1);
    });

    it('a rate changed through one instance values the other instances\' later records and decisions; earlier records keep the old value', async () => {
      const [zero, one, two] = instances;
      const { team } = await createTeam(zero!.db, 'valued-change');
      await setRate(zero!.db, team.id, 'ETH', '3000', Date.now() - DAY, 18);
      // A payment may be worth at most 25 USD: 0.01 ETH is 30 at 3000, 20 at 2000.
      const policy = await blockPolicy(zero!, team.id, [
        { kind: 'daily', amount: '1000' },
        { kind: 'per_call', amount: '25' },
      ], 'eth payments');
      // Every instance holds the team's book (a record through each): 0.005 ETH at 3000.
      const before = [paid({ asset: 'ETH', amount: '0.005' }), paid({ asset: 'ETH', amount: '0.005' }), paid({ asset: 'ETH', amount: '0.005' })];
      await Promise.all(before.map((record, n) => instances[n]!.ingestor.ingest(team.id, [record], 'events')));
      const refused = await two!.commit.authorize(authorizationRequest(team.id, '0.01', 'ETH'));
      expect(refused.decision).to.equal('declined');
      expect(JSON.parse(refused.reasons)).to.deep.equal(['Declined by policy "eth payments": the payment of 0.01 (worth 30 USD) would exceed its per_call limit of 25']);

      // The change and the decisions after it fall in one minute (holds are summed by the minute
      // they were approved in): not started in the last 10 s of a minute.
      const toNextMinute = 60_000 - (Date.now() % 60_000);
      if (toNextMinute < 10_000) await new Promise((resolve) => setTimeout(resolve, toNextMinute + 100));
      // The change, through instance 1: ETH is 2000 from now.
      const changeAt = Date.now();
      await setRate(one!.db, team.id, 'ETH', '2000', changeAt, 18);
      const eth = async (i: Instance) => (await i.rates.book(team.id)).histories.get('ETH')?.[0]?.value;
      expect(await eth(one!), 'on the instance that made it').to.equal('2000');
      for (const other of [zero!, two!]) expect(await within(NOTIFY_WAIT_MS, () => eth(other), (v) => v === '2000'), 'on another instance').to.equal('2000');

      // Later records, through each instance, at 2000; one sent now but made before the change (a buffer sent late), at 3000.
      const after = [paid({ asset: 'ETH', amount: '0.005' }), paid({ asset: 'ETH', amount: '0.005' }), paid({ asset: 'ETH', amount: '0.005' })];
      const late = paid({ asset: 'ETH', amount: '0.005', created_at: changeAt - 5_000 });
      const sent = await Promise.all([...after.map((record, n) => instances[n]!.ingestor.ingest(team.id, [record], 'events')), zero!.ingestor.ingest(team.id, [late], 'events')]);
      for (const r of sent) expect({ ingested: r.ingested, warnings: r.warnings }).to.deep.equal({ ingested: 1, warnings: [] });
      // Decisions on the other instances value the payment at 2000 too: 20 USD, under the 25 a payment may be worth.
      const [onZero, onTwo] = await Promise.all([zero!.commit.authorize(authorizationRequest(team.id, '0.01', 'ETH')), two!.commit.authorize(authorizationRequest(team.id, '0.01', 'ETH'))]);
      expect([onZero.decision, onTwo.decision], `${onZero.reasons} ${onTwo.reasons}`).to.deep.equal(['approved', 'approved']);

      const stored = await storedValues(team.id);
      const worth = (records: { id: string }[]) => records.map((r) => stored[r.id]?.value);
      expect(worth(before), 'records before the change').to.deep.equal(['15', '15', '15']);
      expect(worth(after), 'records after it').to.deep.equal(['10', '10', '10']);
      expect(worth([late]), 'a record made before it, sent after').to.deep.equal(['15']);
      expect((await runningTotal(team.id)).toFixed(), 'the running total').to.equal('90');
      // The two decisions came after every record (90 spent); the second saw the first's hold, valued at 2000 too.
      const checks = [onZero, onTwo].map((row) => checkOf(row, policy.id, 'daily'));
      expect(checks.map((c) => c.spent.toFixed())).to.deep.equal(['90', '90']);
      expect(checks.map((c) => c.held.toFixed()).sort(), 'held as each decision saw it: the other\'s 0.01 ETH, approved after the change, is worth 20').to.deep.equal(['0', '20']);
    });

    it('an authorization in an asset without a rate is declined on every instance, naming the asset; one unvalued alert', async () => {
      const { team } = await createTeam(instances[0]!.db, 'valued-norate');
      const policy = await blockPolicy(instances[0]!, team.id, [{ kind: 'daily', amount: '100' }]);
      const [weth, usdc] = await Promise.all([
        Promise.all(instances.map((i) => i.commit.authorize(authorizationRequest(team.id, '0.01', WETH)))),
        Promise.all(instances.map((i) => i.commit.authorize(authorizationRequest(team.id, '10', 'USDC')))),
      ]);
      for (const row of weth) {
        expect(row.decision, row.reasons).to.equal('declined');
        expect(JSON.parse(row.reasons)).to.deep.equal([
          `Declined by policy "research 100 a day": asset ${WETH} has no rate into USD, so its value is unknown and its daily limit of 100 USD cannot be checked`,
        ]);
      }
      // The same payment in an asset with a rate is approved on each: the asset alone declined the others.
      expect(usdc.map((row) => row.decision)).to.deep.equal(['approved', 'approved', 'approved']);
      const held = await instances[0]!.db.all<{ id: string }>("SELECT id FROM authorizations WHERE team_id = ? AND state = 'held'", [team.id]);
      expect(held.map((h) => h.id).sort()).to.deep.equal(usdc.map((row) => row.id).sort());
      const alerts = await instances[0]!.db.all<{ kind: string; policy_id: string; subject: string; count: number | string }>('SELECT kind, policy_id, subject, count FROM alerts WHERE team_id = ?', [team.id]);
      expect(alerts.map((a) => [a.kind, a.policy_id, a.subject, Number(a.count)])).to.deep.equal([['unvalued', policy.id, WETH, 3]]);
    });
  });
});
