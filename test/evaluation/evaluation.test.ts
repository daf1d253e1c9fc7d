import { expect } from 'chai';
import type { App } from '../../src/app.js';
import { AgentActivity } from '../../src/agents/activity.js';
import { Evaluator } from '../../src/evaluation/evaluator.js';
import { Ingestor } from '../../src/ingest/ingestor.js';
import { GroupCommit } from '../../src/ingest/group-commit.js';
import { zonedMonth, zonedWeek } from '../../src/domain/windows.js';
import { api, appWith, newTeam, testEnv, describeOnEachRegistry, registryCommits } from '../helpers/context.js';
import { alertsOf, sendRecords, testRecord, type Team, type TestRecord } from '../helpers/common.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const record = testRecord;
const ingest = sendRecords;
const alerts = alertsOf;
async function policy(team: Team, limits: object[], extra: object = {}) {
  return (await api().post('/api/v1/policies').set(...team.auth).send({ name: 'p', limits, ...extra }).expect(201)).body;
}

/** The start of yesterday's UTC day, plus an offset: windows that closed (late records) and were read from the store. */
const yesterday = (offset: number) => Math.floor(Date.now() / DAY) * DAY - DAY + offset;

describeOnEachRegistry('policy evaluation at ingest', () => {
  // Each kind: just under, exactly at, then just over its limit of 2.5, by 10^-18.
  const kinds: [string, object][] = [
    ['per_call', { kind: 'per_call', amount: '2.5' }],
    ['per_hour', { kind: 'per_hour', amount: '2.5' }],
    ['daily', { kind: 'daily', amount: '2.5' }],
    ['per_endpoint', { kind: 'per_endpoint', amount: '2.5', endpoint: 'https://api.example.com/v1/' }],
  ];
  for (const [kind, limit] of kinds) {
    it(`${kind}: just under and at the limit raise nothing, just over raises one alert`, async () => {
      const team = await newTeam();
      await policy(team, [limit]);
      const t = yesterday(7 * HOUR);
      if (kind === 'per_call') {
        const res = await ingest(team, [{ amount: '2.499999999999999999', created_at: t }, { amount: '2.5', created_at: t + 1 }]);
        expect(res.alerts_created).to.equal(0);
        expect((await ingest(team, [{ amount: '2.500000000000000001', created_at: t + 2 }])).alerts_created).to.equal(1);
      } else {
        expect((await ingest(team, [{ amount: '2.499999999999999999', created_at: t }])).alerts_created).to.equal(0);
        expect((await ingest(team, [{ amount: '0.000000000000000001', created_at: t + 1 }])).alerts_created).to.equal(0);
        expect((await ingest(team, [{ amount: '0.000000000000000001', created_at: t + 2 }])).alerts_created).to.equal(1);
      }
      const [a] = await alerts(team);
      expect(a).to.include({ kind, limit: '2.5', observed: '2.500000000000000001', count: 1 });
    });
  }

  it('per_call: at the limit nothing, one unit of 10^-18 over it a warning for flag', async () => {
    const team = await newTeam();
    const p = await policy(team, [{ kind: 'per_call', amount: '1.000000000000000001' }]);
    const t = Date.now() - 60_000;
    expect((await ingest(team, [{ amount: '1.000000000000000001', created_at: t }, { amount: '1', created_at: t }])).alerts_created).to.equal(0);
    expect((await ingest(team, [{ amount: '1.000000000000000002', created_at: t }])).alerts_created).to.equal(1);
    const [a] = await alerts(team);
    expect(a).to.include({ type: 'violation', kind: 'per_call', severity: 'warning', status: 'open', agentId: 'bot', policyId: p.id, observed: '1.000000000000000002', limit: '1.000000000000000001', count: 1, window: null });
    // Another breach updates the open alert.
    expect((await ingest(team, [{ amount: '3', created_at: t + 1 }])).alerts_created).to.equal(0);
    const [again] = await alerts(team);
    expect(again).to.include({ id: a!.id, count: 2, observed: '3' });
    expect(again!.sampleEventIds).to.have.length(2);
  });

  it('per_hour: the window total including the record, exact; a new hour starts from zero', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'per_hour', amount: '10' }], { action: 'block' });
    const h = yesterday(5 * HOUR);
    expect((await ingest(team, [{ amount: '3.3', created_at: h }, { amount: '3.3', created_at: h + 1000 }])).alerts_created).to.equal(0);
    expect((await ingest(team, [{ amount: '3.4', created_at: h + HOUR - 1 }])).alerts_created).to.equal(0); // exactly 10
    expect((await ingest(team, [{ amount: '5', created_at: h + HOUR }])).alerts_created).to.equal(0); // next hour: 5
    expect((await ingest(team, [{ amount: '0.000000000000000001', created_at: h + 2 }])).alerts_created).to.equal(1); // first hour: 10 + 1e-18
    expect((await ingest(team, [{ amount: '5.000000000000000001', created_at: h + HOUR + 5 }])).alerts_created).to.equal(1); // second hour
    const list = await alerts(team);
    expect(list.map((a) => a.window.start).sort()).to.deep.equal([new Date(h).toISOString(), new Date(h + HOUR).toISOString()]);
    const first = list.find((a) => a.window.start === new Date(h).toISOString())!;
    expect(first).to.include({ kind: 'per_hour', severity: 'critical', observed: '10.000000000000000001', limit: '10' });
    expect(first.details.late).to.equal(true);
    expect(first.message).to.match(/late record: this window closed at/);
  });

  it('daily follows the policy time zone', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'daily', amount: '10' }], { timezone: 'Asia/Kolkata' });
    // Kolkata midnight is 18:30 UTC: these two fall on different local days, the same UTC day.
    const midnight = yesterday(18 * HOUR + 30 * 60_000);
    expect((await ingest(team, [{ amount: '6', created_at: midnight - 1 }, { amount: '6', created_at: midnight }])).alerts_created).to.equal(0);
    expect((await ingest(team, [{ amount: '4.000000000000000001', created_at: midnight + HOUR }])).alerts_created).to.equal(1);
    const [a] = await alerts(team);
    expect(a!.window).to.deep.equal({ start: new Date(midnight).toISOString(), end: new Date(midnight + DAY).toISOString() });
    expect(a!.observed).to.equal('10.000000000000000001');
  });

  it('monthly in a time zone: the records either side of a local month end count apart; the breach names the local month', async () => {
    const team = await newTeam();
    const zone = 'America/New_York';
    await policy(team, [{ kind: 'monthly', amount: '10' }], { timezone: zone, action: 'block' });
    // The start of last month in New York (a month whose both sides are in the past).
    const last = zonedMonth(zonedMonth(Date.now(), zone).start - 1, zone);
    expect((await ingest(team, [{ amount: '6', created_at: last.start - 60_000 }, { amount: '6', created_at: last.start }])).alerts_created).to.equal(0);
    expect((await ingest(team, [{ amount: '4', created_at: last.end - 1 }])).alerts_created).to.equal(0); // exactly 10
    expect((await ingest(team, [{ amount: '0.000000000000000001', created_at: last.start + DAY }])).alerts_created).to.equal(1);
    const [a] = await alerts(team);
    expect(a).to.include({ kind: 'monthly', observed: '10.000000000000000001', limit: '10' });
    expect(a!.window).to.deep.equal({ start: new Date(last.start).toISOString(), end: new Date(last.end).toISOString() });
  });

  it('weekly: ISO weeks from Monday 00:00 in the zone; an authorization sees the week so far', async () => {
    const team = await newTeam();
    const zone = 'Europe/Berlin';
    await policy(team, [{ kind: 'weekly', amount: '10' }], { timezone: zone, action: 'block' });
    const week = zonedWeek(Date.now(), zone);
    // Sunday before this week: not counted; this week: 9.5 so far.
    await ingest(team, [{ amount: '50', created_at: week.start - 1 }, { amount: '9.5', created_at: Math.max(week.start, Date.now() - 60_000) }]);
    const ask = (amount: string) => api().post('/api/v1/authorizations').set(...team.auth).send({ agent_id: 'bot', endpoint: 'https://api.example.com/v1/x', amount, asset: 'USDC' }).expect(200);
    const fits = await ask('0.5');
    expect(fits.body.decision).to.equal('approved');
    const check = fits.body.checks.find((c: { kind: string }) => c.kind === 'weekly');
    expect(check).to.include({ spent: '9.5', limit: '10' });
    expect(check.window).to.deep.equal({ start: new Date(week.start).toISOString(), end: new Date(week.end).toISOString() });
    expect((await ask('0.000000000000000001')).body.decision).to.equal('declined'); // 9.5 + 0.5 held + 1e-18
  });

  it('a suspended agent: its authorizations are declined saying so, its records raise one critical alert per day; resumed, it is approved again', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'daily', amount: '1000' }]);
    await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'bot', name: 'Bot' }).expect(201);
    await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'other', name: 'Other' }).expect(201);
    const ask = (agent: string) => api().post('/api/v1/authorizations').set(...team.auth).send({ agent_id: agent, endpoint: 'https://api.example.com/v1/x', amount: '0.5' }).expect(200);
    expect((await ask('bot')).body.decision).to.equal('approved');
    await api().patch('/api/v1/agents/bot').set(...team.auth).send({ status: 'suspended' }).expect(200);
    const declined = (await ask('bot')).body;
    expect(declined.decision).to.equal('declined');
    expect(declined.reasons[0]).to.equal('Declined: agent bot is suspended');
    expect((await ask('other')).body.decision, 'another agent is not stopped').to.equal('approved');
    // Records: two batches today, one yesterday: two alerts (one per UTC day), today's counting two records.
    const now = Date.now() - 60_000;
    expect((await ingest(team, [{ amount: '0.1', created_at: now }])).alerts_created).to.equal(1);
    expect((await ingest(team, [{ amount: '0.2', created_at: now + 1 }, { amount: '0.3', created_at: now, agent_id: 'other' }])).alerts_created).to.equal(0);
    expect((await ingest(team, [{ amount: '0.4', created_at: now - DAY }])).alerts_created).to.equal(1);
    const raised = (await alerts(team)).filter((a) => a.kind === 'suspended');
    expect(raised.map((a) => [a.type, a.severity, a.agentId, a.count]).sort()).to.deep.equal([
      ['violation', 'critical', 'bot', 1],
      ['violation', 'critical', 'bot', 2],
    ]);
    await api().patch('/api/v1/agents/bot').set(...team.auth).send({ status: 'active' }).expect(200);
    expect((await ask('bot')).body.decision).to.equal('approved');
    expect((await ingest(team, [{ amount: '0.1', created_at: now + 2 }])).alerts_created).to.equal(0);
  });

  it('per_endpoint sums matching endpoints per UTC day only', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'per_endpoint', amount: '5', endpoint: '*.example.com' }]);
    const t = yesterday(HOUR);
    const res = await ingest(team, [
      { amount: '2', created_at: t, endpoint: 'https://a.example.com/x' },
      { amount: '3', created_at: t + 1, endpoint: 'https://b.example.com/y' },
      { amount: '100', created_at: t + 2, endpoint: 'https://example.org/z' },
      { amount: '100', created_at: t + 3, endpoint: 'https://example.com/apex' },
    ]);
    expect(res.alerts_created).to.equal(0);
    expect((await ingest(team, [{ amount: '0.01', created_at: yesterday(DAY - 1), endpoint: 'https://c.example.com/' }])).alerts_created).to.equal(1);
    expect((await ingest(team, [{ amount: '4', created_at: yesterday(DAY), endpoint: 'https://c.example.com/' }])).alerts_created).to.equal(0); // next day
    const [a] = await alerts(team);
    expect(a).to.include({ kind: 'per_endpoint', subject: '*.example.com', observed: '5.01', limit: '5' });
  });

  it('applies only to the agents a policy names, and not after it is deactivated', async () => {
    const team = await newTeam();
    const p = await policy(team, [{ kind: 'per_call', amount: '1' }], { agents: ['named'] });
    const t = Date.now() - 1000;
    expect((await ingest(team, [{ agent_id: 'other', amount: '5', created_at: t }])).alerts_created).to.equal(0);
    expect((await ingest(team, [{ agent_id: 'named', amount: '5', created_at: t }])).alerts_created).to.equal(1);
    await api().patch(`/api/v1/policies/${p.id}`).set(...team.auth).send({ active: false }).expect(200);
    await api().patch(`/api/v1/alerts/${(await alerts(team))[0]!.id}`).set(...team.auth).send({ status: 'resolved' }).expect(200);
    expect((await ingest(team, [{ agent_id: 'named', amount: '5', created_at: t + 1 }])).alerts_created).to.equal(0);
  });

  it('concurrent batches of one agent raise exactly one alert, counting every breaching record', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'daily', amount: '10' }]);
    const t = Date.now() - 120_000;
    const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 5 }, (_, i) => ({ amount: '1', created_at: t + b * 10 + i })));
    const results = await Promise.all(batches.map((events) => ingest(team, events)));
    expect(results.reduce((n, r) => n + r.alerts_created, 0)).to.equal(1);
    const list = await alerts(team);
    expect(list).to.have.length(1);
    expect(list[0]).to.include({ count: 30, observed: '40' }); // records 11 to 40 are over 10
  });

  it("a window's alert shows the largest total it reached, also when a later record has an earlier event time; a payment's, the latest by event time", async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'daily', amount: '10' }, { kind: 'per_call', amount: '1' }]);
    const t = yesterday(12 * HOUR);
    await ingest(team, [{ amount: '11', created_at: t }]);
    // Later in arrival, earlier in time: the day's total is now 13, and its payment is not the latest.
    await ingest(team, [{ amount: '2', created_at: t - HOUR }]);
    const byKind = Object.fromEntries((await alerts(team)).map((a) => [a.kind, a]));
    expect(byKind.daily).to.include({ observed: '13', count: 2 });
    expect(byKind.per_call).to.include({ observed: '11', count: 2 });
  });

  it('a retried batch changes nothing', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'per_call', amount: '1' }]);
    const events = [record({ amount: '2', created_at: Date.now() - 1000 })];
    const first = await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
    const retry = await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
    expect([first.body.alerts_created, retry.body.alerts_created, retry.body.duplicates]).to.deep.equal([1, 0, 1]);
    expect((await alerts(team))[0]!.count).to.equal(1);
  });

  it('a client-reported blocked record is a critical violation, flagged a warning; one alert each', async () => {
    const team = await newTeam();
    const t = Date.now() - 1000;
    const res = await ingest(team, [
      { amount: '1', created_at: t, policy_evaluation: 'blocked', policy_id: 'client-budget' },
      { amount: '1', created_at: t + 1, policy_evaluation: 'blocked', policy_id: 'client-budget' },
      { amount: '1', created_at: t + 2, policy_evaluation: 'flagged' },
      { amount: '1', created_at: t + 3, policy_evaluation: 'allowed' },
    ]);
    expect(res.alerts_created).to.equal(2);
    const list = await alerts(team);
    const blocked = list.find((a) => a.kind === 'client_blocked')!;
    const flagged = list.find((a) => a.kind === 'client_flagged')!;
    expect(blocked).to.include({ type: 'violation', severity: 'critical', count: 2, subject: 'client-budget' });
    expect(flagged).to.include({ type: 'violation', severity: 'warning', count: 1, subject: 'api.example.com' });
  });

  it('a resolved alert stays resolved; the next breach opens a new one; reopening it then is a 409', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'per_call', amount: '1' }]);
    const t = Date.now() - 1000;
    await ingest(team, [{ amount: '2', created_at: t }]);
    const [a] = await alerts(team);
    const resolved = await api().patch(`/api/v1/alerts/${a!.id}`).set(...team.auth).send({ status: 'resolved', note: 'raised the budget' }).expect(200);
    expect(resolved.body).to.include({ status: 'resolved', resolution: 'raised the budget' });
    expect(Date.parse(resolved.body.resolvedAt)).to.be.closeTo(Date.now(), 10_000);
    expect((await ingest(team, [{ amount: '2', created_at: t + 1 }])).alerts_created).to.equal(1);
    const old = await api().get(`/api/v1/alerts/${a!.id}`).set(...team.auth).expect(200);
    expect(old.body).to.include({ status: 'resolved', count: 1 });
    const conflict = await api().patch(`/api/v1/alerts/${a!.id}`).set(...team.auth).send({ status: 'open' }).expect(409);
    expect(conflict.body.error.code).to.equal('conflict');
    const newer = (await alerts(team, '&status=open'))[0]!;
    await api().patch(`/api/v1/alerts/${newer.id}`).set(...team.auth).send({ status: 'resolved' }).expect(200);
    const reopened = await api().patch(`/api/v1/alerts/${a!.id}`).set(...team.auth).send({ status: 'open' }).expect(200);
    expect(reopened.body).to.include({ status: 'open', resolvedAt: null, resolution: null });
  });

  it('team usage counts open alerts', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'per_call', amount: '1' }]);
    await ingest(team, [{ amount: '2', created_at: Date.now() - 1000, agent_id: 'a' }, { amount: '2', created_at: Date.now() - 1000, agent_id: 'b' }]);
    const res = await api().get('/api/v1/team').set(...team.auth).expect(200);
    expect(res.body.usage.openAlerts).to.equal(2);
  });
});

describe('anomalies', () => {
  let app: App;
  before(() => {
    const { deps } = testEnv();
    const config = { spikeFactor: 10, spikeBaseline: 10, loopCalls: 20, loopSeconds: 60, newPayeeLearningHours: 0 };
    // A group commit of its own (other thresholds), on the shared log and loader.
    const evaluator = new Evaluator({ registry: deps.registry, store: deps.events, anomalies: config, logger: deps.logger, awaitLoaded: deps.ingest.awaitLoaded, revisions: deps.policyRevisions });
    const limits = { maxRows: deps.config.ingest.backlogMaxRows, maxBytes: deps.config.ingest.backlogMaxBytes };
    const commit = new GroupCommit(registryCommits(deps.registry), deps.ingest.log, deps.ingest.freshness, limits, deps.logger, evaluator, new AgentActivity());
    app = appWith([], { ingest: { ...deps.ingest, commit, ingestor: new Ingestor(deps.schemas, commit) } });
  });

  /** Ten calls a minute apart to a few URLs, amounts within 20% of 1, one payee. */
  const steady = (t0: number, n = 30) =>
    Array.from({ length: n }, (_, i) => ({
      amount: (0.9 + (i % 5) * 0.05).toFixed(2),
      created_at: t0 + i * 60_000,
      endpoint: `https://api.example.com/v1/${i % 3}`,
      payee_address: '0xpayee1',
    }));

  it('steady traffic raises none', async () => {
    const team = await newTeam();
    const t0 = Date.now() - 40 * 60_000;
    const events = steady(t0);
    for (let i = 0; i < events.length; i += 10) expect((await ingest(team, events.slice(i, i + 10), app)).alerts_created).to.equal(0);
    expect(await alerts(team, '', app)).to.deep.equal([]);
  });

  it('a spike against the agent\'s recent average, with factor and baseline', async () => {
    const team = await newTeam();
    const t0 = Date.now() - 40 * 60_000;
    await ingest(team, steady(t0, 10), app);
    expect((await ingest(team, [{ amount: '50', created_at: t0 + 11 * 60_000, payee_address: '0xpayee1' }], app)).alerts_created).to.equal(1);
    const [a] = await alerts(team, '', app);
    expect(a).to.include({ type: 'anomaly', kind: 'spike', observed: '50', limit: '10' });
    expect(a!.details).to.include({ baseline: '1', factor: 50, baselinePayments: 10 });
  });

  it('a first payment to a new payee, once the agent has paid another', async () => {
    const team = await newTeam();
    const t0 = Date.now() - 40 * 60_000;
    await ingest(team, steady(t0, 5), app);
    const res = await ingest(team, [{ amount: '1', created_at: t0 + 6 * 60_000, payee_address: '0xnewpayee' }, { amount: '1', created_at: t0 + 7 * 60_000, payee_address: '0xnewpayee' }], app);
    expect(res.alerts_created).to.equal(1);
    const [a] = await alerts(team, '', app);
    expect(a).to.include({ kind: 'new_payee', subject: '0xnewpayee', count: 1 });
    expect((await ingest(team, [{ amount: '1', created_at: t0 + 8 * 60_000, payee_address: '0xnewpayee' }], app)).alerts_created).to.equal(0);
  });

  it('a runaway loop: one agent calling one URL more than the threshold within the window', async () => {
    const team = await newTeam();
    const t0 = Date.now() - 10 * 60_000;
    const calls = Array.from({ length: 21 }, (_, i) => ({ amount: '0.01', created_at: t0 + i * 1000, endpoint: 'https://api.example.com/loop', payee_address: '0xpayee1' }));
    expect((await ingest(team, calls.slice(0, 20), app)).alerts_created).to.equal(0);
    expect((await ingest(team, calls.slice(20), app)).alerts_created).to.equal(1);
    const [a] = await alerts(team, '', app);
    expect(a).to.include({ kind: 'loop', severity: 'critical', subject: 'https://api.example.com/loop', observed: '21', limit: '20' });
  });
});

describeOnEachRegistry('alerts API', () => {
  it('filters by status, type, severity, agent and time; pages with no duplicates or gaps', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'per_call', amount: '1' }], { action: 'block' });
    const t = Date.now() - 10 * 60_000;
    // 12 agents breach per_call (critical violations); 3 of them also report flagged (warnings).
    const events: TestRecord[] = Array.from({ length: 12 }, (_, i) => ({ agent_id: `agent-${i}`, amount: '2', created_at: t + i * 1000 }));
    events.push(...[0, 1, 2].map((i) => ({ agent_id: `agent-${i}`, amount: '0.5', created_at: t + 100_000 + i, policy_evaluation: 'flagged' })));
    expect((await ingest(team, events)).alerts_created).to.equal(15);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: { data: { id: string }[]; next_cursor: string | null } } = await api()
        .get(`/api/v1/alerts?limit=4${cursor ? `&cursor=${cursor}` : ''}`)
        .set(...team.auth)
        .expect(200);
      seen.push(...res.body.data.map((a) => a.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).to.have.length(15);
    expect(new Set(seen).size).to.equal(15);
    expect(await alerts(team, '&severity=warning')).to.have.length(3);
    expect(await alerts(team, '&severity=critical&type=violation')).to.have.length(12);
    expect(await alerts(team, '&type=anomaly')).to.have.length(0);
    expect(await alerts(team, '&agent=agent-1')).to.have.length(2);
    expect(await alerts(team, `&from=${t + 100_000}`)).to.have.length(3);
    expect(await alerts(team, `&to=${new Date(t + 5000).toISOString()}`)).to.have.length(5);
    const one = (await alerts(team, '&agent=agent-5'))[0]!;
    await api().patch(`/api/v1/alerts/${one.id}`).set(...team.auth).send({ status: 'resolved' }).expect(200);
    expect(await alerts(team, '&status=resolved')).to.have.length(1);
    expect(await alerts(team, '&status=open')).to.have.length(14);
  });

  it('another team gets 404 for get and patch; unknown ids 404', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'per_call', amount: '1' }]);
    await ingest(team, [{ amount: '2', created_at: Date.now() - 1000 }]);
    const [a] = await alerts(team);
    const other = await newTeam();
    await api().get(`/api/v1/alerts/${a!.id}`).set(...other.auth).expect(404);
    await api().patch(`/api/v1/alerts/${a!.id}`).set(...other.auth).send({ status: 'resolved' }).expect(404);
    expect((await api().get(`/api/v1/alerts/${a!.id}`).set(...team.auth).expect(200)).body.status).to.equal('open');
    await api().get('/api/v1/alerts/alr_nope').set(...team.auth).expect(404);
    expect(await alerts(other)).to.deep.equal([]);
  });

  // The interface says PATCH resolves and shows no body: no body, {} and a note alone resolve.
  for (const [label, send] of [
    ['no body', undefined],
    ['{}', {}],
    ['{"note"} alone', { note: 'seen, budget raised' }],
  ] as const) {
    it(`PATCH with ${label} resolves the alert`, async () => {
      const team = await newTeam();
      await policy(team, [{ kind: 'per_call', amount: '1' }]);
      await ingest(team, [{ amount: '2', created_at: Date.now() - 1000 }]);
      const [a] = await alerts(team);
      expect(a!.status).to.equal('open');
      const request = api().patch(`/api/v1/alerts/${a!.id}`).set(...team.auth);
      const res = await (send === undefined ? request : request.send(send)).expect(200);
      expect(res.body.status).to.equal('resolved');
      expect(res.body.resolution).to.equal(send && 'note' in send ? send.note : null);
      const stored = await api().get(`/api/v1/alerts/${a!.id}`).set(...team.auth).expect(200);
      expect(stored.body.status).to.equal('resolved');
    });
  }

  it('PATCH with a body that is not JSON is still a 415, and an empty JSON body resolves', async () => {
    const team = await newTeam();
    await policy(team, [{ kind: 'per_call', amount: '1' }]);
    await ingest(team, [{ amount: '2', created_at: Date.now() - 1000 }]);
    const [a] = await alerts(team);
    await api().patch(`/api/v1/alerts/${a!.id}`).set(...team.auth).set('Content-Type', 'text/plain').send('resolve').expect(415);
    const res = await api().patch(`/api/v1/alerts/${a!.id}`).set(...team.auth).set('Content-Type', 'application/json').send('').expect(200);
    expect(res.body.status).to.equal('resolved');
  });

  const badPatches: [object, string][] = [
    [{ status: 'closed' }, 'status'],
    [{ status: 'open', note: 'x' }, 'note'],
    [{ status: 'resolved', note: 5 }, 'note'],
    [{ status: 'resolved', severity: 'info' }, 'severity'],
  ];
  for (const [body, field] of badPatches) {
    it(`PATCH ${JSON.stringify(body)} is a 400 naming ${field}`, async () => {
      const team = await newTeam();
      await policy(team, [{ kind: 'per_call', amount: '1' }]);
      await ingest(team, [{ amount: '2', created_at: Date.now() - 1000 }]);
      const [a] = await alerts(team);
      const res = await api().patch(`/api/v1/alerts/${a!.id}`).set(...team.auth).send(body).expect(400);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).to.include(field);
    });
  }

  for (const [query, field] of [['status=closed', 'status'], ['severity=high', 'severity'], ['from=soon', 'from'], ['limit=0', 'limit'], ['cursor=xyz', 'cursor']]) {
    it(`GET /alerts?${query} is a 400 naming ${field}`, async () => {
      const res = await api().get(`/api/v1/alerts?${query}`).set(...(await newTeam()).auth).expect(400);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).to.include(field);
    });
  }
});
