/** Per-key rate limits: token buckets for records (ingest) and requests (everything else). */
import { expect } from 'chai';
import { RateLimiter, type LimitOutcome } from '../../src/limits/rate-limiter.js';
import { TokenBucket } from '../../src/limits/token-bucket.js';
import { bearer, keyWith, sleep } from '../helpers/common.js';
import { api, appWith, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';

let idCounter = 0;
const events = (n: number) =>
  Array.from({ length: n }, () => ({
    id: `rl-${process.pid}-${++idCounter}`,
    agent_id: 'a1',
    endpoint: 'https://api.example.com/x',
    method: 'GET',
    amount: '0.01',
  }));

describeOnEachRegistry('rate limits per key', function () {
  this.timeout(60_000);

  describe('token bucket', () => {
    it('holds one second of tokens, refills at its rate, and lets a batch larger than the burst run into debt', () => {
      const bucket = new TokenBucket(100, 0);
      expect(bucket.take(60, 0)).to.equal(true);
      expect(bucket.remaining(0)).to.equal(40);
      expect(bucket.take(60, 0)).to.equal(false);
      expect(bucket.remaining(0)).to.equal(40); // a refusal takes nothing
      expect(bucket.secondsUntil(60, 0)).to.equal(1);
      expect(bucket.take(60, 200)).to.equal(true); // 40 + 20 refilled in 200 ms
      expect(bucket.remaining(10_000)).to.equal(100); // never more than the burst
      expect(bucket.take(250, 10_000)).to.equal(true); // larger than the burst: admitted when full
      expect(bucket.remaining(10_000)).to.equal(0);
      expect(bucket.hasAny(11_000)).to.equal(false); // -150 + 100
      expect(bucket.secondsUntil(250, 11_000)).to.equal(2); // needs a full bucket again: 150 more
      expect(bucket.take(250, 12_500)).to.equal(true);
    });

    it('a limiter keeps one bucket per key and kind, and a rate of 0 is no limit', () => {
      let now = 0;
      const limiter = new RateLimiter({ requestsPerSecond: 2, recordsPerSecond: 0 }, () => now);
      const own = { requestsPerSecond: null, recordsPerSecond: null };
      expect((limiter.take('k1', 'requests', own, 1) as LimitOutcome).allowed).to.equal(true);
      expect((limiter.take('k1', 'requests', own, 1) as LimitOutcome).allowed).to.equal(true);
      const refused = (limiter.take('k1', 'requests', own, 1) as LimitOutcome);
      expect(refused).to.include({ allowed: false, rate: 2, remaining: 0, retryAfterSeconds: 1 });
      expect((limiter.take('k2', 'requests', own, 1) as LimitOutcome).allowed).to.equal(true);
      expect(limiter.take('k1', 'records', own, 1_000_000)).to.equal(undefined);
      expect((limiter.take('k1', 'records', { requestsPerSecond: null, recordsPerSecond: 5 }, 5) as LimitOutcome).allowed).to.equal(true);
      now = 500;
      expect((limiter.take('k1', 'requests', own, 1) as LimitOutcome).allowed).to.equal(true);
    });
  });

  it('requests: RateLimit headers on every answer, 429 in the error shape with Retry-After when over, and the bucket refills', async () => {
    const team = await newTeam();
    const key = await keyWith(team, { scopes: ['read'], rateLimit: { requests_per_second: 3 } });
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await api().get('/api/v1/agents').set(...bearer(key.apiKey)).expect(200);
      expect(res.headers['ratelimit-policy']).to.equal('"requests";q=3;w=1');
      seen.push(res.headers.ratelimit as string);
    }
    // r counts down; t is the whole seconds until the bucket is full again.
    expect(seen.map((h) => /r=(\d+)/.exec(h)![1])).to.deep.equal(['2', '1', '0']);
    expect(seen[2]).to.match(/^"requests";r=0;t=1$/);
    const refused = await api().get('/api/v1/agents').set(...bearer(key.apiKey)).expect(429);
    const error = errorOf(refused.body);
    expect(error.code).to.equal('rate_limited');
    expect(error.message).to.include('3 requests a second');
    expect(error.details).to.deep.equal([{ field: 'rate_limit.requests_per_second', message: 'is 3' }]);
    expect(refused.headers['retry-after']).to.equal('1');
    expect(refused.headers['ratelimit-policy']).to.equal('"requests";q=3;w=1');
    expect(refused.headers.ratelimit).to.equal('"requests";r=0;t=1');
    // Another key of the same team has its own bucket.
    await api().get('/api/v1/agents').set(...team.auth).expect(200);
    await sleep(1_050);
    const again = await api().get('/api/v1/agents').set(...bearer(key.apiKey)).expect(200);
    expect(again.headers.ratelimit).to.match(/^"requests";r=2;t=1$/);
  });

  it('records: a batch costs one token per record; a refused batch stores nothing, and is stored once after Retry-After', async () => {
    const team = await newTeam();
    const key = await keyWith(team, { rateLimit: { records_per_second: 150 } });
    const first = await api().post('/api/v1/events').set(...bearer(key.apiKey)).send({ events: events(100) }).expect(200);
    expect(first.body.ingested).to.equal(100);
    expect(first.headers['ratelimit-policy']).to.equal('"records";q=150;w=1');
    expect(first.headers.ratelimit).to.match(/^"records";r=(50|51);t=1$/);

    const batch = events(100);
    const refused = await api().post('/api/v1/events').set(...bearer(key.apiKey)).send({ events: batch }).expect(429);
    expect(errorOf(refused.body).details).to.deep.equal([{ field: 'rate_limit.records_per_second', message: 'is 150' }]);
    expect(refused.headers['retry-after']).to.equal('1');
    // The SDK's route shares the bucket; the requests bucket is separate and untouched.
    await api().post('/api/v1/audit/batch').set(...bearer(key.apiKey)).send({ records: batch }).expect(429);
    const read = await api().post('/api/v1/audit/count').set(...bearer(key.apiKey)).send({}).expect(200);
    expect(read.body.count).to.equal(100);
    expect(read.headers['ratelimit-policy']).to.match(/^"requests";q=\d+;w=1$/);

    await sleep(Number(refused.headers['retry-after']) * 1000 + 50);
    const retried = await api().post('/api/v1/events').set(...bearer(key.apiKey)).send({ events: batch }).expect(200);
    expect(retried.body).to.include({ ingested: 100, duplicates: 0 });
    const count = await api().post('/api/v1/audit/count').set(...bearer(key.apiKey)).send({}).expect(200);
    expect(count.body.count).to.equal(200);
  });

  it('a batch larger than the burst is served when the bucket is full, and the debt is waited out', async () => {
    const team = await newTeam();
    const key = await keyWith(team, { rateLimit: { records_per_second: 50 } });
    const big = await api().post('/api/v1/audit/batch').set(...bearer(key.apiKey)).send({ records: events(120) }).expect(200);
    expect(big.body.ingested).to.equal(120);
    expect(big.headers.ratelimit).to.match(/^"records";r=0;t=[23]$/); // 70 in debt, 120 to refill
    const refused = await api().post('/api/v1/events').set(...bearer(key.apiKey)).send({ events: events(1) }).expect(429);
    expect(Number(refused.headers['retry-after'])).to.be.within(1, 2);
  });

  it('a 400 and a 403 of a limited route carry the headers too; an empty records bucket refuses before the body is read', async () => {
    const team = await newTeam();
    const key = await keyWith(team, { scopes: ['ingest'], rateLimit: { records_per_second: 10, requests_per_second: 100 } });
    // A limiter whose clock stands still: the bucket empties as the test counts, however slow the hour.
    const now = Date.now();
    const app = appWith([], { rateLimiter: new RateLimiter(testEnv().deps.config.rateLimits, () => now) });
    const bad = await api(app).post('/api/v1/events').set(...bearer(key.apiKey)).send({ events: 'x' }).expect(400);
    expect(bad.headers['ratelimit-policy']).to.equal('"records";q=10;w=1');
    expect(bad.headers.ratelimit).to.equal('"records";r=9;t=1'); // a body without records costs one
    const forbidden = await api(app).get('/api/v1/agents').set(...bearer(key.apiKey)).expect(403);
    expect(forbidden.headers['ratelimit-policy']).to.equal('"requests";q=100;w=1');
    await api(app).post('/api/v1/events').set(...bearer(key.apiKey)).send({ events: events(9) }).expect(200);
    // Not JSON at all: refused for the rate before the parser would have said so.
    const early = await api(app).post('/api/v1/events').set(...bearer(key.apiKey)).type('json').send('{not json').expect(429);
    expect(errorOf(early.body).code).to.equal('rate_limited');
  });

  it('defaults apply to keys without their own rates; GET /keys shows the rates each key is held to; rotation keeps them', async () => {
    const team = await newTeam();
    const { rateLimits } = testEnv().deps.config;
    const res = await api().get('/api/v1/team').set(...team.auth).expect(200);
    expect(res.headers['ratelimit-policy']).to.equal(`"requests";q=${rateLimits.requestsPerSecond};w=1`);
    const own = await keyWith(team, { name: 'limited', rateLimit: { records_per_second: 2_000 } });
    expect(own.rateLimit).to.deep.equal({ requestsPerSecond: rateLimits.requestsPerSecond, recordsPerSecond: 2_000 });
    const rotated = await api().post('/api/v1/team/rotate-key').set(...bearer(own.apiKey)).expect(200);
    expect(rotated.body.rateLimit).to.deep.equal(own.rateLimit);
    const ingest = await api().post('/api/v1/events').set(...bearer(rotated.body.apiKey)).send({ events: events(1) }).expect(200);
    expect(ingest.headers['ratelimit-policy']).to.equal('"records";q=2000;w=1');
    const list = await api().get('/api/v1/keys').set(...team.auth).expect(200);
    expect(list.body.data.map((k: { name: string; rateLimit: unknown }) => [k.name, k.rateLimit])).to.deep.equal([
      ['limited', { requestsPerSecond: rateLimits.requestsPerSecond, recordsPerSecond: 2_000 }],
      ['default', { requestsPerSecond: rateLimits.requestsPerSecond, recordsPerSecond: rateLimits.recordsPerSecond }],
    ]);
  });

  it("the ingest benchmark's load (16 clients sending batches of 100 back to back) is never limited by the defaults", async () => {
    const team = await newTeam();
    const { rateLimits } = testEnv().deps.config;
    // Well above the fastest this service ingests on a small machine (docs/performance.md).
    expect(rateLimits.recordsPerSecond).to.be.at.least(100_000);
    let lowest = Infinity;
    let answers = 0;
    const end = Date.now() + 2_000;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (Date.now() < end) {
          const res = await api().post('/api/v1/events').set(...team.auth).send({ events: events(100) });
          expect(res.status, JSON.stringify(res.body)).to.equal(200);
          lowest = Math.min(lowest, Number(/r=(\d+)/.exec(res.headers.ratelimit as string)![1]));
          answers++;
        }
      }),
    );
    expect(answers).to.be.above(16);
    expect(lowest).to.be.above(0);
  });

  it('bad rate limits are 400s naming the field', async () => {
    const team = await newTeam();
    for (const [rateLimit, field] of [
      [{ records_per_second: 0 }, 'rate_limit.records_per_second'],
      [{ requests_per_second: 1.5 }, 'rate_limit.requests_per_second'],
      [{ requests_per_second: '10' }, 'rate_limit.requests_per_second'],
      [{ per_minute: 10 }, 'rate_limit.per_minute'],
    ] as const) {
      const res = await api().post('/api/v1/keys').set(...team.auth).send({ name: 'x', scopes: ['read'], rate_limit: rateLimit }).expect(400);
      expect((errorOf(res.body).details as { field: string }[]).map((d) => d.field), JSON.stringify(rateLimit)).to.include(field);
    }
  });

  it('RATE_LIMIT_*_PER_SECOND=0 turns the default limits off: no headers, never 429', async () => {
    const e = testEnv();
    const rateLimits = { requestsPerSecond: 0, recordsPerSecond: 0 };
    // As main.ts builds them from one config: the limiter enforces, the config is what keys show.
    const app = appWith([], { config: { ...e.deps.config, rateLimits }, rateLimiter: new RateLimiter(rateLimits) });
    const team = await newTeam();
    const res = await api(app).get('/api/v1/team').set(...team.auth).expect(200);
    expect(res.headers).to.not.have.property('ratelimit');
    expect(res.body.usage).to.be.an('object');
    const keys = await api(app).get('/api/v1/keys').set(...team.auth).expect(200);
    expect(keys.body.data[0].rateLimit).to.deep.equal({ requestsPerSecond: null, recordsPerSecond: null });
  });

  it('counts refusals in /metrics', async () => {
    const team = await newTeam();
    const key = await keyWith(team, { scopes: ['read'], rateLimit: { requests_per_second: 1 } });
    await api().get('/api/v1/agents').set(...bearer(key.apiKey)).expect(200);
    await api().get('/api/v1/agents').set(...bearer(key.apiKey)).expect(429);
    const metrics = await api().get('/metrics').expect(200);
    expect(metrics.text).to.match(/spendscope_rate_limited_total\{kind="requests"\} [1-9]/);
  });
});
