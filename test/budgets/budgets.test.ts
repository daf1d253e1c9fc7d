/**
 * Budgets the way finance sets them (issue 31): `total` from starts_at, call counts, pools shared by
 * agents, filters, threshold alerts. Each at ingest and in authorizations, on both registries.
 */
import { expect } from 'chai';
import { resolveEndedThresholds, WINDOW_ENDED } from '../../src/alerts/window-end.js';
import { api, describeOnEachRegistry, errorOf, newTeam, testEnv } from '../helpers/context.js';
import { alertsOf, sendRecords, type Team, type TestRecord } from '../helpers/common.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The alerts a batch of records raised. */
const ingest = async (team: Team, records: TestRecord[]): Promise<number> => (await sendRecords(team, records)).alerts_created;
const alerts = (team: Team) => alertsOf(team);
async function policy(team: Team, body: object) {
  return (await api().post('/api/v1/policies').set(...team.auth).send({ name: 'budget', action: 'block', ...body }).expect(201)).body;
}
async function ask(team: Team, fields: { agent_id?: string; amount: string; endpoint?: string; asset?: string; category?: string; tags?: string[] }) {
  const body = { agent_id: 'bot', endpoint: 'https://api.example.com/v1/x', asset: 'USDC', ...fields };
  return (await api().post('/api/v1/authorizations').set(...team.auth).send(body).expect(200)).body;
}

describeOnEachRegistry('budgets: windows, pools, filters, thresholds', () => {
  it('total counts from starts_at (default the creation minute): earlier records do not count; its window has no end', async () => {
    const team = await newTeam();
    const startsAt = Math.floor(Date.now() / MINUTE) * MINUTE - 2 * HOUR;
    const p = await policy(team, { limits: [{ kind: 'total', amount: '10' }], starts_at: new Date(startsAt).toISOString() });
    expect(p).to.include({ starts_at: new Date(startsAt).toISOString(), scope: 'agent', match: null });
    expect(p.notify_at).to.deep.equal([]);
    // Before the start: not counted, however much.
    expect(await ingest(team, [{ amount: '100', created_at: startsAt - 1 }, { amount: '6', created_at: startsAt }])).to.equal(0);
    expect(await ingest(team, [{ amount: '4', created_at: startsAt + HOUR }])).to.equal(0); // exactly 10
    const check = (await ask(team, { amount: '0' })).checks[0];
    expect(check).to.include({ kind: 'total', spent: '10', limit: '10', remaining: '0', breaks: false });
    expect(check.window).to.deep.equal({ start: new Date(startsAt).toISOString(), end: null });
    expect(await ingest(team, [{ amount: '0.5', created_at: Date.now() - MINUTE }])).to.equal(1);
    const [a] = await alerts(team);
    expect(a).to.include({ kind: 'total', observed: '10.5', limit: '10' });
    expect(a!.window).to.deep.equal({ start: new Date(startsAt).toISOString(), end: null });
    // The default: the creation's minute. A start with seconds is refused, naming the field.
    const created = await policy(team, { limits: [{ kind: 'total', amount: '1' }], active: false });
    expect(Date.parse(created.starts_at)).to.equal(Math.floor(Date.parse(created.createdAt) / MINUTE) * MINUTE);
    const bad = await api().post('/api/v1/policies').set(...team.auth).send({ name: 'x', limits: [{ kind: 'total', amount: '1' }], starts_at: '2026-11-01T00:00:30Z' }).expect(400);
    expect(errorOf(bad.body).details).to.deep.include({ field: 'starts_at', message: 'must fall on a whole minute (no seconds)' });
  });

  it('call counts: the call past count breaches; holds count as calls; count and amount are each refused on the other kinds', async () => {
    const team = await newTeam();
    await policy(team, { limits: [{ kind: 'calls_per_hour', count: 3 }] });
    // Inside this hour (a minute ago, unless the hour began less than a minute ago): the calls count in its window.
    const now = Math.max(Date.now() - MINUTE, Math.floor(Date.now() / HOUR) * HOUR);
    expect(await ingest(team, [{ amount: '0', created_at: now }, { amount: '5', created_at: now }])).to.equal(0);
    const held = await ask(team, { amount: '1' });
    expect(held.decision).to.equal('approved');
    expect(held.checks[0]).to.include({ kind: 'calls_per_hour', limit: '3', spent: '2', held: '0', remaining: '1', breaks: false });
    const declined = await ask(team, { amount: '0.01' }); // 2 calls + 1 held + this one
    expect(declined.decision).to.equal('declined');
    expect(declined.checks[0]).to.include({ spent: '2', held: '1', breaks: true });
    expect(declined.reasons[0]).to.match(/2 calls and 1 held plus this one would exceed its calls_per_hour limit of 3/);
    // Records: the third is at the limit, the fourth breaks it (the breach the decline opened: one alert).
    expect(await ingest(team, [{ amount: '0', created_at: now + 1 }])).to.equal(0);
    expect(await ingest(team, [{ amount: '0', created_at: now + 2 }])).to.equal(0);
    const breaches = (await alerts(team)).filter((a) => a.kind === 'calls_per_hour');
    expect(breaches.map((a) => [a.observed, a.limit, a.count])).to.deep.equal([['4', '3', 2]]);
    expect(breaches[0]!.message).to.match(/broke the calls-per-hour limit of 3 of policy "budget": 4 calls in the window/);
    for (const [limit, field] of [
      [{ kind: 'calls_per_minute', amount: '3' }, 'limits[0].amount'],
      [{ kind: 'daily', count: 3 }, 'limits[0].count'],
      [{ kind: 'daily' }, 'limits[0].amount'],
      [{ kind: 'calls_per_day' }, 'limits[0].count'],
    ] as const) {
      const res = await api().post('/api/v1/policies').set(...team.auth).send({ name: 'x', limits: [limit] }).expect(400);
      expect(errorOf(res.body).details, JSON.stringify(limit)).to.satisfy((d: { field: string }[]) => d.some((e) => e.field === field));
    }
  });

  it('a pool of three agents shares one total: crossing it together raises one alert, and declines any of them, not others', async () => {
    const team = await newTeam();
    const pool = await policy(team, { scope: 'pool', agents: ['a', 'b', 'c'], limits: [{ kind: 'daily', amount: '1.00' }] });
    const now = Date.now() - MINUTE;
    expect(await ingest(team, [{ agent_id: 'a', amount: '0.40', created_at: now }, { agent_id: 'b', amount: '0.40', created_at: now }])).to.equal(0);
    // An agent outside the pool: counted nowhere in it.
    expect(await ingest(team, [{ agent_id: 'z', amount: '5', created_at: now }])).to.equal(0);
    const check = (await ask(team, { agent_id: 'c', amount: '0.20' })).checks[0];
    expect(check).to.include({ kind: 'daily', spent: '0.8', held: '0', breaks: false });
    // c's hold of 0.20 counts for a and b too: the pool is full.
    const declined = await ask(team, { agent_id: 'a', amount: '0.01' });
    expect(declined.decision).to.equal('declined');
    expect(declined.reasons[0]).to.match(/\(a pool\): spend of 0.8 and holds of 0.2 plus 0.01/);
    expect((await ask(team, { agent_id: 'z', amount: '0.01' })).decision, 'an agent outside the pool').to.equal('approved');
    // c pays more than it held: the pool is over; then a and b pay again: still the one alert the
    // decline opened, counting each (4 occurrences), showing the latest.
    expect(await ingest(team, [{ agent_id: 'c', amount: '0.30', created_at: now + 1 }])).to.equal(0);
    expect(await ingest(team, [{ agent_id: 'a', amount: '0.01', created_at: now + 2 }, { agent_id: 'b', amount: '0.01', created_at: now + 3 }])).to.equal(0);
    const raised = (await alerts(team)).filter((a) => a.policyId === pool.id && a.type === 'violation');
    expect(raised.map((a) => [a.kind, a.count])).to.deep.equal([['daily', 4]]);
    expect(raised[0]!.observed).to.equal('1.12');
    expect(raised[0]!.details.scope).to.equal('pool');
  });

  it('a pool without agents is the whole team; an agent-scope policy without agents is each agent alone', async () => {
    const team = await newTeam();
    await policy(team, { name: 'team', scope: 'pool', limits: [{ kind: 'daily', amount: '1' }], action: 'flag' });
    await policy(team, { name: 'each', limits: [{ kind: 'daily', amount: '0.8' }], action: 'flag' });
    const now = Date.now() - MINUTE;
    expect(await ingest(team, ['a', 'b', 'c'].map((agent_id) => ({ agent_id, amount: '0.4', created_at: now })))).to.equal(1);
    const [a] = await alerts(team);
    expect(a).to.include({ kind: 'daily', observed: '1.2', limit: '1' });
    expect(a!.message).to.match(/^The pool of policy "team" \(agent [abc] paying\) broke its daily limit of 1: spend of 1.2 in the window /);
  });

  it('pools of the same members share one total, each policy its own limits and alerts; new members bring their earlier spend', async () => {
    const team = await newTeam();
    const first = await policy(team, { name: 'first', scope: 'pool', agents: ['a', 'b'], limits: [{ kind: 'daily', amount: '1' }], action: 'flag' });
    const second = await policy(team, { name: 'second', scope: 'pool', agents: ['b', 'a'], limits: [{ kind: 'daily', amount: '2' }], notify_at: [50] });
    const now = Date.now() - MINUTE;
    // c spends before it joins any pool.
    expect(await ingest(team, [{ agent_id: 'c', amount: '0.5', created_at: now }])).to.equal(0);
    // 1.2: the first's breach, the second's 50% (1.0).
    expect(await ingest(team, [{ agent_id: 'a', amount: '0.6', created_at: now }, { agent_id: 'b', amount: '0.6', created_at: now }])).to.equal(2);
    const raised = (await alerts(team)).map((a) => [a.policyId, a.type, a.observed]).sort();
    expect(raised).to.deep.equal([
      [first.id, 'violation', '1.2'],
      [second.id, 'threshold', '1.2'],
    ].sort());
    const checks = (await ask(team, { agent_id: 'a', amount: '0.9' })).checks.map((c: Record<string, unknown>) => [c.policy_id, c.spent, c.breaks]);
    expect(checks).to.deep.equal([
      [first.id, '1.2', true],
      [second.id, '1.2', true],
    ]);
    // The second pool takes c: its total is now a, b and c (c's earlier record included), the first's unchanged.
    await api().patch(`/api/v1/policies/${second.id}`).set(...team.auth).send({ agents: ['a', 'b', 'c'] }).expect(200);
    const after = (await ask(team, { agent_id: 'c', amount: '0' })).checks.map((c: Record<string, unknown>) => [c.policy_id, c.spent]);
    expect(after).to.deep.equal([[second.id, '1.7']]);
    const budgets = (await api().get('/api/v1/budgets').set(...team.auth).expect(200)).body.data as Record<string, unknown>[];
    expect(budgets.map((b) => [b.policy_id, b.spent]).sort()).to.deep.equal([
      [first.id, '1.2'],
      [second.id, '1.7'],
    ].sort());
  });

  it('an agent-scope total is kept for the agents its policies name; an agent named later, or named again, brings all it spent', async () => {
    const team = await newTeam();
    await policy(team, { name: 'a only', agents: ['a'], limits: [{ kind: 'daily', amount: '10' }], action: 'flag' });
    const now = Date.now() - MINUTE;
    expect(await ingest(team, [{ agent_id: 'a', amount: '1', created_at: now }, { agent_id: 'b', amount: '7', created_at: now }])).to.equal(0);
    // The same scope (the UTC day), now read for b: b's day so far counts.
    const bs = await policy(team, { name: 'b too', agents: ['b'], limits: [{ kind: 'daily', amount: '10' }] });
    expect((await ask(team, { agent_id: 'b', amount: '4' })).checks[0]).to.include({ spent: '7', breaks: true });
    // The record breaks it: the alert the decline opened, now at 11.
    expect(await ingest(team, [{ agent_id: 'b', amount: '4', created_at: now + 1 }])).to.equal(0);
    expect((await alerts(team)).map((a) => [a.policyId, a.agentId, a.observed, a.count])).to.deep.equal([[bs.id, 'b', '11', 2]]);
    // b is left out, spends, and is named again: what it spent meanwhile counts.
    await api().patch(`/api/v1/policies/${bs.id}`).set(...team.auth).send({ agents: ['a'] }).expect(200);
    expect(await ingest(team, [{ agent_id: 'b', amount: '5', created_at: now + 2 }])).to.equal(0);
    await api().patch(`/api/v1/policies/${bs.id}`).set(...team.auth).send({ agents: ['b'] }).expect(200);
    expect((await ask(team, { agent_id: 'b', amount: '0' })).checks[0]).to.include({ spent: '16', breaks: true });
    expect((await ask(team, { agent_id: 'a', amount: '0' })).checks[0]).to.include({ spent: '1', breaks: false });
  });

  it('filters: only matching records count and are checked, for each of categories, networks, assets, endpoints and tags', async () => {
    const now = Date.now() - MINUTE;
    const cases: [object, TestRecord, TestRecord][] = [
      [{ categories: ['llm'] }, { amount: '2', created_at: now, endpoint: 'https://api.openai.com/v1/chat' }, { amount: '2', created_at: now, category: 'data' }],
      [{ networks: ['base'] }, { amount: '2', created_at: now, network: 'eip155:8453' }, { amount: '2', created_at: now, network: 'eip155:1' }],
      [{ assets: ['usdc'] }, { amount: '2', created_at: now, asset: 'USDC' }, { amount: '2', created_at: now, asset: 'EURC' }],
      [{ endpoints: ['*.example.com'] }, { amount: '2', created_at: now }, { amount: '2', created_at: now, endpoint: 'https://example.org/x' }],
      [{ tags: ['research'] }, { amount: '2', created_at: now, tags: ['research', 'x'] }, { amount: '2', created_at: now, tags: ['ops'] }],
    ];
    for (const [match, matching, other] of cases) {
      const team = await newTeam();
      await policy(team, { match, limits: [{ kind: 'daily', amount: '3' }, { kind: 'per_call', amount: '1.5' }] });
      // The other record breaks neither limit (not counted, not checked); the matching one breaks per_call.
      expect(await ingest(team, [other, other]), `${JSON.stringify(match)}: not matching`).to.equal(0);
      expect(await ingest(team, [matching]), `${JSON.stringify(match)}: per_call`).to.equal(1);
      expect(await ingest(team, [matching]), `${JSON.stringify(match)}: daily 4 > 3`).to.equal(1);
      const kinds = (await alerts(team)).map((a) => [a.kind, a.observed]).sort();
      expect(kinds, JSON.stringify(match)).to.deep.equal([
        ['daily', '4'],
        ['per_call', '2'],
      ]);
    }
  });

  it('filters in authorizations: the asset and category asked are tested; an asset not given is checked against the budget', async () => {
    const team = await newTeam();
    await policy(team, { match: { assets: ['USDC'], categories: ['llm'] }, limits: [{ kind: 'daily', amount: '1' }] });
    expect((await ask(team, { amount: '5', asset: 'EURC', category: 'llm' })).checks).to.deep.equal([]);
    expect((await ask(team, { amount: '5', asset: 'USDC', category: 'data' })).checks).to.deep.equal([]);
    expect((await ask(team, { amount: '5', asset: 'USDC', category: 'llm' })).decision).to.equal('declined');
    expect((await ask(team, { amount: '5', category: 'llm' })).decision, 'no asset given').to.equal('declined');
    expect((await ask(team, { amount: '0.6', asset: 'usdc', endpoint: 'https://api.openai.com/v1/chat' })).decision).to.equal('approved');
    // The approved hold (0.6, llm by its host) counts in the filtered total.
    expect((await ask(team, { amount: '0.5', asset: 'USDC', category: 'llm' })).checks[0]).to.include({ held: '0.6', breaks: true });
  });

  it('thresholds: each percentage raises one info alert per window, even when one record crosses two, and never again after a restart', async () => {
    const team = await newTeam();
    const p = await policy(team, { limits: [{ kind: 'daily', amount: '10' }], notify_at: [80, 50, 90], action: 'flag' });
    expect(p.notify_at).to.deep.equal([50, 80, 90]);
    const now = Date.now() - MINUTE;
    expect(await ingest(team, [{ amount: '4.999999999999999999', created_at: now }])).to.equal(0);
    expect(await ingest(team, [{ amount: '0.000000000000000001', created_at: now }])).to.equal(1); // exactly 50%
    const thresholds = async () =>
      (await alerts(team))
        .filter((a) => a.type === 'threshold')
        .map((a) => [a.details.percent, a.severity, a.kind, a.observed, a.count, a.status])
        .sort((x, y) => x[0] - y[0]);
    expect(await thresholds()).to.deep.equal([[50, 'info', 'daily', '5', 1, 'open']]);
    // A restart forgets every total; the next record reads the day whole: 50% is not crossed again,
    // and one record crossing 80% and 90% raises both.
    testEnv().deps.ingest.evaluator!.reset();
    expect(await ingest(team, [{ amount: '4.1', created_at: now }])).to.equal(2);
    testEnv().deps.ingest.evaluator!.reset();
    expect(await ingest(team, [{ amount: '0.5', created_at: now }])).to.equal(0);
    expect(await thresholds()).to.deep.equal([
      [50, 'info', 'daily', '5', 1, 'open'],
      [80, 'info', 'daily', '9.1', 1, 'open'],
      [90, 'info', 'daily', '9.1', 1, 'open'],
    ]);
    const [fifty] = (await alerts(team)).filter((a) => a.type === 'threshold' && a.details.percent === 50);
    expect(fifty!.message).to.match(/^Agent bot reached 50% of the daily limit of 10 of policy "budget": spend of 5 in the window /);
    expect(fifty!.policyId).to.equal(p.id);
    // The window ends: they resolve by themselves, with their webhook event; not before.
    const end = Date.parse(fifty!.window.end);
    await resolveEndedThresholds(testEnv().deps.db, end - 1);
    expect((await thresholds()).map((t) => t[5])).to.deep.equal(['open', 'open', 'open']);
    await resolveEndedThresholds(testEnv().deps.db, end);
    const resolved = (await alerts(team)).filter((a) => a.type === 'threshold');
    expect(resolved.map((a) => [a.status, a.resolution])).to.deep.equal([
      ['resolved', WINDOW_ENDED],
      ['resolved', WINDOW_ENDED],
      ['resolved', WINDOW_ENDED],
    ]);
    expect((await alerts(team)).filter((a) => a.type !== 'threshold'), 'other alerts stay as they are').to.deep.equal([]);
  });
});
