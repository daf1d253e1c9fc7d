/**
 * A request the service refuses itself (503: nothing done, retry) costs no rate-limit token, so a
 * client retrying its 503s through an outage is never also refused for its rate (429).
 */
import { expect } from 'chai';
import { GroupCommit } from '../../src/ingest/group-commit.js';
import { Ingestor } from '../../src/ingest/ingestor.js';
import { TokenBucket } from '../../src/limits/token-bucket.js';
import { RateLimiter, type LimitOutcome } from '../../src/limits/rate-limiter.js';
import { bearer, keyWith } from '../helpers/common.js';
import { api, appWith, errorOf, newTeam, testEnv, registryCommits } from '../helpers/context.js';
import { event, storedCount } from '../ingest/fixtures.js';

/** The app with a group commit of its own on the shared log, whose backlog bound the test moves. */
function appWithBound(limits: { maxRows: number; maxBytes: number }) {
  const { deps } = testEnv();
  const commit = new GroupCommit(registryCommits(deps.registry), deps.ingest.log, deps.ingest.freshness, limits, deps.logger);
  // Buckets of its own on a clock the test moves: they refill when it says, however slow the hour.
  const clock = { now: Date.now() };
  const rateLimiter = new RateLimiter(deps.config.rateLimits, () => clock.now);
  return { commit, clock, app: appWith([], { rateLimiter, ingest: { ...deps.ingest, commit, ingestor: new Ingestor(deps.schemas, commit) } }) };
}

describe('a request answered 503 costs no rate-limit token', function () {
  this.timeout(60_000);

  it('a bucket given back what a refused request took is as if it had taken nothing, never past its burst', () => {
    const bucket = new TokenBucket(20, 0);
    expect(bucket.take(15, 0)).to.equal(true);
    bucket.give(15, 100);
    expect(bucket.remaining(100)).to.equal(20); // 5 + 2 refilled + 15, capped at the burst
    expect(bucket.take(50, 100)).to.equal(true); // into debt
    bucket.give(50, 100);
    expect(bucket.remaining(100)).to.equal(20);
    let now = 0;
    const limiter = new RateLimiter({ requestsPerSecond: 0, recordsPerSecond: 10 }, () => now);
    const rates = { requestsPerSecond: null, recordsPerSecond: null };
    expect((limiter.take('h', 'records', rates, 10) as LimitOutcome).remaining).to.equal(0);
    expect(limiter.refund('h', 'records', rates, 10)).to.include({ remaining: 10, allowed: true });
    expect(limiter.refund('h', 'requests', rates, 1)).to.equal(undefined); // not limited: nothing to give back
    now = 50;
    expect((limiter.take('h', 'records', rates, 10) as LimitOutcome).allowed).to.equal(true);
  });

  it('during a backlog outage a client retrying a batch past its records budget gets only 503s, never a 429; after recovery the limit applies as before', async () => {
    const team = await newTeam('retry-503');
    const { apiKey: key } = await keyWith(team, { rateLimit: { records_per_second: 20 } });
    // The backlog at its bound: every batch is refused by the same test as in an outage of ClickHouse.
    const limits = { maxRows: 0, maxBytes: 0 };
    const { app, clock } = appWithBound(limits);
    const batch = Array.from({ length: 10 }, (_, i) => event({ id: `retry-${i}`, amount: '0.1' }));
    const send = () => api(app).post('/api/v1/events').set(...bearer(key)).send({ events: batch });

    // 12 retries of 10 records within one instant of the limiter's clock: six times the 20 records/s budget.
    const answers = [];
    for (let i = 0; i < 12; i++) answers.push(await send());
    expect(answers.map((a) => a.status)).to.deep.equal(Array(12).fill(503));
    for (const res of answers) {
      expect(errorOf(res.body).code).to.equal('store_unavailable');
      expect(res.headers['retry-after']).to.match(/^\d+$/);
      // The answer's headers already count the refund: the bucket is full.
      expect(res.headers.ratelimit).to.equal('"records";r=20;t=0');
    }

    // Recovered: the same batch is stored once, and the limit holds as for any client.
    limits.maxRows = 1e9;
    limits.maxBytes = 1024 ** 4;
    const stored = await send().expect(200);
    expect(stored.body).to.include({ ingested: 10, duplicates: 0 });
    expect(stored.headers.ratelimit).to.equal('"records";r=10;t=1');
    await api(app).post('/api/v1/events').set(...bearer(key)).send({ events: [event({ id: 'after-1' })] }).expect(200);
    const limited = await api(app)
      .post('/api/v1/events')
      .set(...bearer(key))
      .send({ events: Array.from({ length: 10 }, (_, i) => event({ id: `after-more-${i}` })) })
      .expect(429);
    expect(errorOf(limited.body).code).to.equal('rate_limited');
    clock.now += Number(limited.headers['retry-after']) * 1000 + 50;
    await api(app).post('/api/v1/events').set(...bearer(key)).send({ events: [event({ id: 'after-2' })] }).expect(200);
    expect(await storedCount(team.teamId)).to.equal(12);
  });

  it('POST /authorizations answered 503 costs no token of the requests bucket; other requests are limited as before', async () => {
    const team = await newTeam('authz-503');
    const { apiKey: key } = await keyWith(team, { rateLimit: { requests_per_second: 3 } });
    // A group commit that refuses everything, as while the service shuts down.
    const { app, commit } = appWithBound({ maxRows: 1e9, maxBytes: 1024 ** 4 });
    await commit.close();
    const ask = { agent_id: 'a1', endpoint: 'https://api.example.com/x', amount: '0.25' };
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await api(app).post('/api/v1/authorizations').set(...bearer(key)).send(ask));
    expect(answers.map((a) => a.status)).to.deep.equal(Array(8).fill(503));
    for (const res of answers) expect(res.headers.ratelimit).to.equal('"requests";r=3;t=0');
    for (let i = 0; i < 3; i++) await api(app).get('/api/v1/agents').set(...bearer(key)).expect(200);
    const limited = await api(app).get('/api/v1/agents').set(...bearer(key)).expect(429);
    expect(errorOf(limited.body).code).to.equal('rate_limited');
  });
});
