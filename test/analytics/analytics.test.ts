/**
 * Differential test: random events go in through the real ingest; every analytics answer is
 * compared with one computed here with exact decimal arithmetic from the same events.
 */
import { expect } from 'chai';
import BigNumber from 'bignumber.js';
import type { Team } from '../helpers/common.js';
import { api, errorOf, newTeam, describeOnEachRegistry } from '../helpers/context.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface Ev {
  id: string;
  agent_id: string;
  endpoint: string;
  domain: string;
  method: string;
  amount: string;
  network: string;
  asset: string;
  category: string;
  policy_evaluation: 'allowed' | 'flagged' | 'blocked';
  created_at: number;
}

/** A seeded generator, so a failure can be replayed. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const DOMAINS = ['api.openai.com', 'api.anthropic.com', 'data.example.com', 'search.example.net', 'bücher.example.org', 'weather.example.io'];
const NETWORKS: [string, string][] = [['eip155:8453', 'eip155:8453'], ['base', 'eip155:8453'], ['solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'], ['', 'unknown']];
const CATEGORIES = ['llm', 'api', 'data', 'search'];
const ASSETS = ['USDC', 'EURC', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', ''];
const OUTCOMES = ['allowed', 'allowed', 'allowed', 'flagged', 'blocked'] as const;

function makeEvents(count: number, end: number, rnd: () => number): (Ev & { sentNetwork: string })[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  return Array.from({ length: count }, (_, i) => {
    const domain = pick(DOMAINS);
    const [sentNetwork, network] = pick(NETWORKS);
    // Amounts with 0 to 18 decimals, some tiny, some large.
    const whole = rnd() < 0.1 ? String(Math.floor(rnd() * 1e6)) : '0';
    const decimals = Math.floor(rnd() * 19);
    const fraction = Array.from({ length: decimals }, () => Math.floor(rnd() * 10)).join('');
    return {
      id: `ev-${i}-${Math.floor(rnd() * 1e9)}`,
      agent_id: `agent-${Math.floor(rnd() * 5)}`,
      endpoint: `https://${domain}/v1/${pick(['a', 'b', 'c'])}`,
      domain,
      method: 'POST',
      amount: decimals ? `${whole}.${fraction}` : whole,
      network,
      sentNetwork,
      asset: pick(ASSETS),
      category: pick(CATEGORIES),
      policy_evaluation: pick(OUTCOMES),
      created_at: end - Math.floor(rnd() * 5 * DAY),
    };
  });
}

/** USDC by symbol and by its Base contract is worth its amount in USD (a built-in peg); EURC (no EUR rate here) and no asset have no value. */
const USD_PEGGED = new Set(['USDC', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913']);

function expectedBy(events: Ev[], key: (e: Ev) => string) {
  const map = new Map<string, { spend: BigNumber; value: BigNumber; count: number; unvalued: number }>();
  for (const e of events) {
    const entry = map.get(key(e)) ?? { spend: new BigNumber(0), value: new BigNumber(0), count: 0, unvalued: 0 };
    entry.spend = entry.spend.plus(e.amount);
    if (USD_PEGGED.has(e.asset)) entry.value = entry.value.plus(e.amount);
    // Nothing paid is worth 0 with or without a rate.
    else if (!new BigNumber(e.amount).isZero()) entry.unvalued++;
    entry.count++;
    map.set(key(e), entry);
  }
  return map;
}

const inRange = (events: Ev[], from: number, to: number) => events.filter((e) => e.created_at >= from && e.created_at < to);
const total = (events: Ev[]) => events.reduce((s, e) => s.plus(e.amount), new BigNumber(0));
const same = (actual: string, expected: BigNumber, what: string) =>
  expect(new BigNumber(actual).isEqualTo(expected), `${what}: ${actual} != ${expected.toFixed()}`).to.equal(true);

describeOnEachRegistry('analytics', function () {
  this.timeout(60_000);
  const now = Date.now();
  const end = now - HOUR;
  const rnd = random(20261121);
  const events = makeEvents(700, end, rnd);
  let team: Team;

  before(async () => {
    team = await newTeam('analytics');
    const toSend = events.map(({ domain: _d, sentNetwork, network: _n, ...e }) => ({ ...e, network: sentNetwork }));
    for (let i = 0; i < toSend.length; i += 100) {
      await api().post('/api/v1/events').set(...team.auth).send({ events: toSend.slice(i, i + 100) }).expect(200);
    }
    // Duplicates, re-sent in later batches and within a batch, must not change any answer.
    const again = toSend.slice(0, 60);
    await api().post('/api/v1/events').set(...team.auth).send({ events: [...again, ...again.slice(0, 10)] }).expect(200);
  });

  const ranges: [string, () => [number, number]][] = [
    ['the whole data', () => [end - 6 * DAY, now]],
    ['ragged ms edges across days', () => [end - 4 * DAY + 37 * 60_000 + 12_345, end - DAY + 5 * HOUR + 7_891]],
    ['within one hour', () => [end - 2 * DAY + 10 * 60_000 + 1, end - 2 * DAY + 50 * 60_000 - 1]],
    ['an empty range', () => [end - 30 * DAY, end - 20 * DAY]],
  ];

  for (const [name, range] of ranges) {
    describe(`over ${name}`, () => {
      it('summary matches', async () => {
        const [from, to] = range();
        const res = await api().get(`/api/v1/analytics/summary?from=${from}&to=${to}&limit=1000`).set(...team.auth).expect(200);
        const inside = inRange(events, from, to);
        const body = res.body;
        same(body.totalSpend, total(inside), 'totalSpend');
        expect(body.count).to.equal(inside.length);
        expect(body.period).to.deep.equal({ from: new Date(from).toISOString(), to: new Date(to).toISOString() });
        const max = inside.reduce((m, e) => BigNumber.max(m, e.amount), new BigNumber(0));
        same(body.maxPayment, max, 'maxPayment');
        const avg = inside.length ? total(inside).div(inside.length).decimalPlaces(18, BigNumber.ROUND_HALF_EVEN) : new BigNumber(0);
        same(body.avgPayment, avg, 'avgPayment');
        expect(body.activeAgents).to.equal(new Set(inside.map((e) => e.agent_id)).size);
        expect(body.flagged).to.equal(inside.filter((e) => e.policy_evaluation === 'flagged').length);
        expect(body.blocked).to.equal(inside.filter((e) => e.policy_evaluation === 'blocked').length);
        for (const [field, key] of [['byAgent', (e: Ev) => e.agent_id], ['byEndpoint', (e: Ev) => e.domain]] as const) {
          const expected = expectedBy(inside, key);
          expect(Object.keys(body[field]).sort(), field).to.deep.equal([...expected.keys()].sort());
          for (const [k, v] of expected) {
            same(body[field][k].spend, v.spend, `${field}.${k}`);
            expect(body[field][k].count).to.equal(v.count);
          }
        }
        const previous = inRange(events, from - (to - from), from);
        same(body.previous.totalSpend, total(previous), 'previous.totalSpend');
        expect(body.previous.count).to.equal(previous.length);
      });

      const breakdowns: [string, (e: Ev) => string][] = [
        ['by-agent', (e) => e.agent_id],
        ['by-category', (e) => e.category],
        ['by-endpoint', (e) => e.domain],
        ['by-endpoint?level=url', (e) => e.endpoint],
        ['by-network', (e) => e.network],
        ['by-asset', (e) => e.asset],
      ];
      for (const [path, key] of breakdowns) {
        it(`${path} matches, sorted by value, then spend`, async () => {
          const [from, to] = range();
          const sep = path.includes('?') ? '&' : '?';
          const res = await api().get(`/v1/analytics/${path}${sep}from=${from}&to=${to}&limit=1000`).set(...team.auth).expect(200);
          const inside = inRange(events, from, to);
          const expected = expectedBy(inside, key);
          expect(res.body.map((r: { key: string }) => r.key).sort()).to.deep.equal([...expected.keys()].sort());
          const sum = total(inside);
          for (const row of res.body as { key: string; spend: string; value: string; count: number; unvalued: number; share: number }[]) {
            same(row.spend, expected.get(row.key)!.spend, `${path} ${row.key}`);
            same(row.value, expected.get(row.key)!.value, `${path} ${row.key} value`);
            expect(row.count).to.equal(expected.get(row.key)!.count);
            expect(row.unvalued, `${path} ${row.key} unvalued`).to.equal(expected.get(row.key)!.unvalued);
            expect(row.share).to.be.closeTo(sum.isZero() ? 0 : expected.get(row.key)!.spend.div(sum).toNumber(), 1e-6);
          }
          // Largest value first, then spend (amounts of unlike assets only break ties).
          const ranked = (res.body as { value: string; spend: string }[]).map((r) => [new BigNumber(r.value), new BigNumber(r.spend)] as const);
          for (let i = 1; i < ranked.length; i++) {
            const [[value, spend], [nextValue, nextSpend]] = [ranked[i - 1]!, ranked[i]!];
            expect(value.gt(nextValue) || (value.eq(nextValue) && spend.gte(nextSpend))).to.equal(true);
          }
        });
      }

      it('hourly timeseries is zero-filled, matches per bucket, and sums to the summary', async () => {
        const [from, to] = range();
        const res = await api().get(`/api/v1/analytics/timeseries?from=${from}&to=${to}&granularity=hour`).set(...team.auth).expect(200);
        const firstBucket = Math.floor(from / HOUR) * HOUR;
        const expectedBuckets = Math.ceil((to - firstBucket) / HOUR);
        expect(res.body).to.have.length(expectedBuckets);
        const inside = inRange(events, from, to);
        const perBucket = expectedBy(inside, (e) => new Date(Math.floor(e.created_at / HOUR) * HOUR).toISOString());
        let sum = new BigNumber(0);
        let count = 0;
        res.body.forEach((b: { t: string; spend: string; count: number }, i: number) => {
          expect(b.t).to.equal(new Date(firstBucket + i * HOUR).toISOString());
          same(b.spend, perBucket.get(b.t)?.spend ?? new BigNumber(0), `bucket ${b.t}`);
          expect(b.count).to.equal(perBucket.get(b.t)?.count ?? 0);
          sum = sum.plus(b.spend);
          count += b.count;
        });
        same(sum.toFixed(), total(inside), 'sum of buckets');
        expect(count).to.equal(inside.length);
      });
    });
  }

  it('agent keeps one agent\'s records in the summary, every breakdown and the timeseries (an unknown agent: zeros)', async () => {
    const [from, to] = [end - 4 * DAY + 37 * 60_000 + 12_345, end - DAY + 5 * HOUR + 7_891];
    const agent = 'agent-2';
    const inside = inRange(events, from, to).filter((e) => e.agent_id === agent);
    expect(inside.length).to.be.greaterThan(20);
    const get = (path: string, query: Record<string, string | number>) =>
      api().get(`/api/v1/analytics/${path}`).query({ from, to, agent, ...(path === 'timeseries' ? {} : { limit: 1000 }), ...query }).set(...team.auth).expect(200);

    const summary = (await get('summary', {})).body;
    same(summary.totalSpend, total(inside), 'totalSpend');
    expect(summary.count).to.equal(inside.length);
    expect(summary.activeAgents).to.equal(1);
    expect(Object.keys(summary.byAgent)).to.deep.equal([agent]);
    const previous = inRange(events, from - (to - from), from).filter((e) => e.agent_id === agent);
    same(summary.previous.totalSpend, total(previous), 'previous.totalSpend');

    for (const [path, query, key] of [
      ['by-endpoint', { level: 'url' }, (e: Ev) => e.endpoint],
      ['by-category', {}, (e: Ev) => e.category],
    ] as const) {
      const rows = (await get(path, query)).body as { key: string; spend: string; count: number }[];
      const expected = expectedBy(inside, key);
      expect(rows.map((r) => r.key).sort()).to.deep.equal([...expected.keys()].sort());
      for (const row of rows) same(row.spend, expected.get(row.key)!.spend, `${path} ${row.key}`), expect(row.count).to.equal(expected.get(row.key)!.count);
    }

    const buckets = (await get('timeseries', { granularity: 'hour' })).body as { t: string; spend: string; count: number }[];
    const perBucket = expectedBy(inside, (e) => new Date(Math.floor(e.created_at / HOUR) * HOUR).toISOString());
    expect(buckets).to.have.length(Math.ceil((to - Math.floor(from / HOUR) * HOUR) / HOUR));
    for (const b of buckets) {
      same(b.spend, perBucket.get(b.t)?.spend ?? new BigNumber(0), `bucket ${b.t}`);
      expect(b.count).to.equal(perBucket.get(b.t)?.count ?? 0);
    }

    const nobody = (await api().get('/api/v1/analytics/summary').query({ from, to, agent: 'no-such-agent' }).set(...team.auth).expect(200)).body;
    expect([nobody.totalSpend, nobody.count, nobody.activeAgents]).to.deep.equal(['0', 0, 0]);
    const tooLong = await api().get('/api/v1/analytics/timeseries').query({ agent: 'x'.repeat(257) }).set(...team.auth).expect(400);
    expect((errorOf(tooLong.body).details as { field: string }[]).map((d) => d.field)).to.deep.equal(['agent']);
  });

  it('includes the last bucket when the range ends just after a boundary', async () => {
    const hour = Math.floor(end / HOUR) * HOUR - 5 * HOUR;
    const [from, to] = [hour + 10 * 60_000 + 1, hour + 2 * HOUR + 5 * 60_000];
    const res = await api().get(`/api/v1/analytics/timeseries?from=${from}&to=${to}&granularity=hour`).set(...team.auth).expect(200);
    expect(res.body.map((b: { t: string }) => b.t)).to.deep.equal([0, 1, 2].map((i) => new Date(hour + i * HOUR).toISOString()));
  });

  it('day buckets follow tz (Asia/Kolkata, UTC+05:30)', async () => {
    const [from, to] = [end - 4 * DAY, now];
    const res = await api().get(`/api/v1/analytics/timeseries?from=${from}&to=${to}&granularity=day&tz=Asia/Kolkata`).set(...team.auth).expect(200);
    const offset = 5.5 * HOUR;
    const dayStart = (t: number) => Math.floor((t + offset) / DAY) * DAY - offset;
    const inside = inRange(events, from, to);
    const perDay = expectedBy(inside, (e) => new Date(dayStart(e.created_at)).toISOString());
    expect(res.body[0].t).to.equal(new Date(dayStart(from)).toISOString());
    for (const b of res.body as { t: string; spend: string; count: number }[]) {
      same(b.spend, perDay.get(b.t)?.spend ?? new BigNumber(0), `day ${b.t}`);
      expect(b.count).to.equal(perDay.get(b.t)?.count ?? 0);
    }
    expect(res.body.reduce((n: number, b: { count: number }) => n + b.count, 0)).to.equal(inside.length);
  });

  it('day buckets in UTC (read from the daily rollup) match per day', async () => {
    const [from, to] = [end - 6 * DAY + 7_777, now];
    const res = await api().get(`/api/v1/analytics/timeseries?from=${from}&to=${to}&granularity=day`).set(...team.auth).expect(200);
    const inside = inRange(events, from, to);
    const perDay = expectedBy(inside, (e) => new Date(Math.floor(e.created_at / DAY) * DAY).toISOString());
    expect(res.body).to.have.length(Math.ceil((to - Math.floor(from / DAY) * DAY) / DAY));
    for (const b of res.body as { t: string; spend: string; count: number }[]) {
      same(b.spend, perDay.get(b.t)?.spend ?? new BigNumber(0), `day ${b.t}`);
      expect(b.count).to.equal(perDay.get(b.t)?.count ?? 0);
    }
  });

  it('limit cuts the ranked keys, never the totals', async () => {
    const [from, to] = [end - 6 * DAY + 1, now - 1];
    const inside = inRange(events, from, to);
    const summary = await api().get(`/api/v1/analytics/summary?from=${from}&to=${to}&limit=1`).set(...team.auth).expect(200);
    same(summary.body.totalSpend, total(inside), 'totalSpend');
    expect(summary.body.count).to.equal(inside.length);
    expect(summary.body.activeAgents).to.equal(new Set(inside.map((e) => e.agent_id)).size);
    const [topAgent] = [...expectedBy(inside, (e) => e.agent_id)].sort((a, b) => b[1].spend.comparedTo(a[1].spend) ?? 0);
    expect(Object.keys(summary.body.byAgent)).to.deep.equal([topAgent![0]]);
    expect(Object.keys(summary.body.byEndpoint)).to.have.length(1);
    const byNetwork = await api().get(`/api/v1/analytics/by-network?from=${from}&to=${to}&limit=1`).set(...team.auth).expect(200);
    expect(byNetwork.body).to.have.length(1);
    const top = expectedBy(inside, (e) => e.network).get(byNetwork.body[0].key)!;
    expect(byNetwork.body[0].share).to.be.closeTo(top.spend.div(total(inside)).toNumber(), 1e-6);
  });

  it('accepts ISO 8601 times and defaults to the last 30 days', async () => {
    const from = end - 3 * DAY;
    const iso = await api().get(`/api/v1/analytics/summary?from=${new Date(from).toISOString()}&to=${new Date(now).toISOString()}`).set(...team.auth).expect(200);
    expect(iso.body.count).to.equal(inRange(events, from, now).length);
    const defaults = await api().get('/api/v1/analytics/summary').set(...team.auth).expect(200);
    expect(Date.parse(defaults.body.period.to) - Date.parse(defaults.body.period.from)).to.equal(30 * DAY);
    expect(defaults.body.count).to.equal(events.length);
  });

  it('another team sees none of it', async () => {
    const other = await newTeam();
    const res = await api().get(`/api/v1/analytics/summary?from=${end - 10 * DAY}&to=${now}`).set(...other.auth).expect(200);
    expect(res.body.count).to.equal(0);
    expect(res.body.byAgent).to.deep.equal({});
  });

  describe('parameter errors', () => {
    const bad: [string, string][] = [
      ['/analytics/summary?from=2000&to=1000', 'from'],
      ['/analytics/summary?from=yesterday', 'from'],
      ['/analytics/by-agent?to=2026-13-45T99:00:00Z', 'to'],
      ['/analytics/by-agent?limit=0', 'limit'],
      ['/analytics/by-network?limit=1001', 'limit'],
      ['/analytics/by-category?limit=ten', 'limit'],
      ['/analytics/timeseries?granularity=year', 'granularity'],
      ['/analytics/timeseries?tz=Mars/Olympus_Mons', 'tz'],
      ['/analytics/timeseries?granularity=minute', 'granularity'],
      ['/analytics/by-endpoint?level=path', 'level'],
      ['/analytics/summary?form=1', 'form'],
    ];
    for (const [path, field] of bad) {
      it(`${path} is a 400 naming ${field}`, async () => {
        const res = await api().get(`/api/v1${path}`).set(...team.auth).expect(400);
        const error = errorOf(res.body);
        expect(error.code).to.equal('validation_failed');
        expect((error.details as { field: string }[]).map((d) => d.field)).to.include(field);
      });
    }
  });
});
