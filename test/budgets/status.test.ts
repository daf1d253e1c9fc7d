/**
 * GET /budgets: every row equal to an exact recomputation of the records and holds sent, and the
 * linear forecast within 5% of the truth on a window of uniform spend. On both registries.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { formatUnits, toUnits } from '../../src/domain/money.js';
import { utcHour, zonedDay } from '../../src/domain/windows.js';
import { api, describeOnEachRegistry, newTeam } from '../helpers/context.js';
import { type Team, sdkId } from '../helpers/common.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

interface Rec {
  id: string;
  agent_id: string;
  endpoint: string;
  method: string;
  amount: string;
  asset: string;
  created_at: number;
}

async function send(team: Team, records: Rec[]) {
  for (let i = 0; i < records.length; i += 100) {
    const res = await api().post('/api/v1/events').set(...team.auth).send({ events: records.slice(i, i + 100) });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).to.equal(200);
  }
}
async function policy(team: Team, body: object) {
  return (await api().post('/api/v1/policies').set(...team.auth).send({ name: 'budget', action: 'flag', ...body }).expect(201)).body;
}
async function budgets(team: Team, query = '') {
  return (await api().get(`/api/v1/budgets${query}`).set(...team.auth).expect(200)).body as { data: Record<string, any>[]; truncated: boolean };
}

describeOnEachRegistry('budget status', () => {
  it('spent equals the sum of the window\'s records and held the open holds, per agent, pool, filter and call count; closest to the limit first', async () => {
    const team = await newTeam();
    const perAgent = await policy(team, { name: 'each', agents: ['a', 'b'], limits: [{ kind: 'daily', amount: '400' }, { kind: 'calls_per_hour', count: 500 }], notify_at: [80] });
    const pool = await policy(team, { name: 'usdc pool', scope: 'pool', match: { assets: ['USDC'] }, limits: [{ kind: 'monthly', amount: '1000' }, { kind: 'total', amount: '5000' }] });
    const now = Date.now();
    const hour = utcHour(now);
    // Random SDK ids and amounts with 18 places, in this UTC hour (so in this day and month too).
    const records: Rec[] = Array.from({ length: 300 }, () => ({
      id: sdkId(),
      agent_id: ['a', 'b', 'c'][crypto.randomInt(3)]!,
      endpoint: 'https://api.example.com/v1/x',
      method: 'POST',
      amount: `${crypto.randomInt(1)}.${crypto.randomInt(1e9).toString().padStart(9, '0')}${crypto.randomInt(1e9).toString().padStart(9, '0')}`,
      asset: crypto.randomInt(4) === 0 ? 'EURC' : 'USDC',
      created_at: hour.start + crypto.randomInt(Math.max(1, now - hour.start)),
    }));
    await send(team, records);
    // Holds: a holds 0.7 and 0.05, c holds 1.25; a declined ask holds nothing.
    const ask = (agent_id: string, amount: string, asset = 'USDC') =>
      api().post('/api/v1/authorizations').set(...team.auth).send({ agent_id, endpoint: 'https://api.example.com/v1/x', amount, asset }).expect(200);
    for (const [agent, amount] of [['a', '0.7'], ['a', '0.05'], ['c', '1.25']] as const) expect((await ask(agent, amount)).body.decision).to.equal('approved');

    const sum = (keep: (r: Rec) => boolean) => records.filter(keep).reduce((s, r) => s + toUnits(r.amount), 0n);
    const count = (keep: (r: Rec) => boolean) => records.filter(keep).length;
    const usdc = (r: Rec) => r.asset === 'USDC';
    const { data, truncated } = await budgets(team);
    expect(truncated).to.equal(false);
    const row = (policyId: string, kind: string, agent: string | null) => data.find((r) => r.policy_id === policyId && r.kind === kind && r.agent_id === agent)!;
    for (const agent of ['a', 'b']) {
      const daily = row(perAgent.id, 'daily', agent);
      const held = agent === 'a' ? toUnits('0.75') : 0n;
      // In value (USD, the team's currency): USDC one for one; EURC has no rate into USD here, so it counts nothing.
      const spent = sum((r) => r.agent_id === agent && usdc(r));
      expect(daily, agent).to.include({ scope: 'agent', currency: 'USD', limit: '400', spent: formatUnits(spent), held: formatUnits(held), remaining: formatUnits(toUnits('400') - spent - held) });
      expect(daily.notify_at).to.deep.equal([80]);
      expect(daily.window).to.deep.equal({ start: new Date(zonedDay(now, 'UTC').start).toISOString(), end: new Date(zonedDay(now, 'UTC').end).toISOString() });
      expect(daily.used).to.be.closeTo(Number(formatUnits(spent + held)) / 400, 1e-6);
      const calls = row(perAgent.id, 'calls_per_hour', agent);
      expect(calls, agent).to.include({ limit: '500', spent: String(count((r) => r.agent_id === agent)), held: agent === 'a' ? '2' : '0' });
    }
    expect(row(perAgent.id, 'daily', 'c'), 'c is not named by the per-agent policy').to.equal(undefined);
    const monthly = row(pool.id, 'monthly', null);
    expect(monthly).to.include({ scope: 'pool', currency: null, spent: formatUnits(sum(usdc)), held: '2' });
    const total = row(pool.id, 'total', null);
    // A total counts from the policy's start (its creation's minute): records of the hour before it do not.
    const since = Date.parse(pool.starts_at);
    expect(total).to.include({ spent: formatUnits(sum((r) => usdc(r) && r.created_at >= since)), held: '2', window: null });
    expect(total.forecast.spent_at_end).to.equal(null);
    // Closest to the limit first: exactly ordered by (spent + held) / limit.
    const used = data.map((r) => r.used as number);
    expect(used).to.deep.equal([...used].sort((x, y) => y - x));
    // Filters: one agent (its own rows and the pools it is in), one policy.
    const ofB = await budgets(team, '?agent_id=b');
    expect(ofB.data.map((r) => [r.policy_id, r.kind, r.agent_id]).sort()).to.deep.equal(
      [
        [perAgent.id, 'calls_per_hour', 'b'],
        [perAgent.id, 'daily', 'b'],
        [pool.id, 'monthly', null],
        [pool.id, 'total', null],
      ].sort(),
    );
    expect((await budgets(team, `?policy_id=${pool.id}`)).data.map((r) => r.kind).sort()).to.deep.equal(['monthly', 'total']);
    const bad = await api().get('/api/v1/budgets?agent=b').set(...team.auth).expect(400);
    expect(bad.body.error.details[0].field).to.equal('agent');
  });

  it('policies naming different agents on one scope each show their own agents\' spend', async () => {
    const team = await newTeam();
    const every = await policy(team, { name: 'every', limits: [{ kind: 'daily', amount: '10' }] });
    const a = await policy(team, { name: 'a', agents: ['a'], limits: [{ kind: 'daily', amount: '10' }] });
    const b = await policy(team, { name: 'b', agents: ['b'], limits: [{ kind: 'daily', amount: '10' }] });
    const at = Date.now() - MINUTE;
    const rec = (agent: string, amount: string): Rec => ({ id: sdkId(), agent_id: agent, endpoint: 'https://api.example.com/x', method: 'GET', amount, asset: 'USDC', created_at: at });
    await send(team, [rec('a', '1'), rec('b', '2'), rec('c', '3')]);
    const rows = (await budgets(team)).data.map((r) => [r.policy_id, r.agent_id, r.spent]);
    expect(rows.sort()).to.deep.equal(
      [
        [a.id, 'a', '1'],
        [b.id, 'b', '2'],
        [every.id, 'a', '1'],
        [every.id, 'b', '2'],
        [every.id, 'c', '3'],
      ].sort(),
    );
  });

  it('the forecast of a window of uniform spend is within 5% of the truth, and says when the limit will be reached', async () => {
    const team = await newTeam();
    const now = Date.now();
    // A zone whose day is between a quarter and three quarters through: enough of it to project from.
    const zone = ['UTC', 'Asia/Tokyo', 'America/New_York', 'Asia/Kolkata', 'Pacific/Auckland', 'America/Los_Angeles'].find((z) => {
      const day = zonedDay(now, z);
      const through = (now - day.start) / (day.end - day.start);
      return through > 0.25 && through < 0.75;
    })!;
    const day = zonedDay(now, zone);
    // One payment of 1 every 5 minutes since the day began: the whole day would pay (its length / 5 min).
    const truth = (day.end - day.start) / (5 * MINUTE);
    const limit = Math.round(truth * 0.9);
    await policy(team, { timezone: zone, limits: [{ kind: 'daily', amount: String(limit) }] });
    const records: Rec[] = [];
    for (let t = day.start; t < now; t += 5 * MINUTE) {
      records.push({ id: sdkId(), agent_id: 'bot', endpoint: 'https://api.example.com/x', method: 'POST', amount: '1', asset: 'USDC', created_at: t });
    }
    await send(team, records);
    const [row] = (await budgets(team)).data;
    expect(row).to.include({ kind: 'daily', agent_id: 'bot', spent: String(records.length) });
    const forecast = Number(row!.forecast.spent_at_end);
    expect(Math.abs(forecast - truth) / truth, `forecast ${forecast}, truth ${truth} in ${zone}`).to.be.below(0.05);
    // The limit is 90% of the day's spend: reached at about 90% of the day.
    const exhausted = Date.parse(row!.forecast.exhausted_at);
    expect(Math.abs(exhausted - (day.start + 0.9 * (day.end - day.start))) / DAY).to.be.below(0.05);
  });
});
