/** Rate buckets belong to a key's holder (the first key of its rotation chain), not to the key id. */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { SCHEMA_DIR } from '../../src/paths.js';
import { migrateRegistry, readMigrations } from '../../src/stores/migrations.js';
import { openRegistry } from '../../src/stores/sqlite.js';
import { generateApiKey, hashApiKey, visiblePrefix } from '../../src/domain/ids.js';
import { findKeyOwner } from '../../src/teams/repository.js';
import type { App } from '../../src/app.js';
import { RateLimiter } from '../../src/limits/rate-limiter.js';
import { bearer, keyWith } from '../helpers/common.js';
import { api, appWith, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { tempDir } from '../helpers/processes.js';
import { sqliteDatabase } from '../../src/stores/sql.js';

interface Key {
  apiKey: string;
  id: string;
}
/** The limiter's clock: buckets refill when a test moves it, however slow the hour. */
const clock = { now: Date.now() };
let app: App;

async function rotate(key: Key): Promise<Key> {
  const res = await api(app).post('/api/v1/team/rotate-key').set(...bearer(key.apiKey)).expect(200);
  return res.body;
}

const read = (key: Key) => api(app).get('/api/v1/agents').set(...bearer(key.apiKey));
const holderOf = async (key: Key) => (await findKeyOwner(testEnv().deps.db, key.apiKey))!.holderId;

let idCounter = 0;
const events = (n: number) =>
  Array.from({ length: n }, () => ({ id: `holder-${process.pid}-${++idCounter}`, agent_id: 'a1', endpoint: 'https://api.example.com/x', method: 'GET', amount: '0.01' }));

describeOnEachRegistry('rate limits follow the key holder', function () {
  this.timeout(60_000);
  before(() => {
    app = appWith([], { rateLimiter: new RateLimiter(testEnv().deps.config.rateLimits, () => clock.now) });
  });

  it('a key that rotates between reads keeps its requests bucket: 429 once it is empty', async () => {
    const team = await newTeam();
    const first = await keyWith(team, { scopes: ['read'], rateLimit: { requests_per_second: 2 }, app });
    await read(first).expect(200);
    const second = await rotate(first); // the bucket's second token
    const refused = await read(second).expect(429);
    expect(errorOf(refused.body).code).to.equal('rate_limited');
    expect(refused.headers.ratelimit).to.equal('"requests";r=0;t=1');
    expect(refused.headers['retry-after']).to.equal('1');
  });

  it('a rotation is a request: on an empty bucket it is the same 429 as a read, and the key is not rotated', async () => {
    const team = await newTeam();
    const first = await keyWith(team, { name: 'limited', scopes: ['read'], rateLimit: { requests_per_second: 2 }, app });
    await read(first).expect(200);
    const second = await rotate(first);
    const refusedRotation = await api(app).post('/api/v1/team/rotate-key').set(...bearer(second.apiKey)).expect(429);
    const refusedRead = await read(second).expect(429);
    const { requestId: _r, ...rotationError } = errorOf(refusedRotation.body);
    const { requestId: _q, ...readError } = errorOf(refusedRead.body);
    expect(rotationError).to.deep.equal(readError);
    expect(rotationError.details).to.deep.equal([{ field: 'rate_limit.requests_per_second', message: 'is 2' }]);
    for (const header of ['retry-after', 'ratelimit-policy', 'ratelimit']) expect(refusedRotation.headers[header], header).to.equal(refusedRead.headers[header]);

    clock.now += 1_050;
    // Still the team's key: listed, working, and the only one of its chain (the refused rotation issued nothing).
    await read(second).expect(200);
    const keys = (await api(app).get('/api/v1/keys').set(...team.auth).expect(200)).body.data as { id: string; name: string }[];
    expect(keys.filter((k) => k.name === 'limited').map((k) => k.id)).to.deep.equal([second.id]);
    const rotations = (await api(app).get('/api/v1/audit-log?limit=200').set(...team.auth).expect(200)).body.data.filter((c: { action: string }) => c.action === 'key.rotate');
    expect(rotations.map((c: { resourceId: string }) => c.resourceId)).to.deep.equal([first.id]);
  });

  it('the records bucket is inherited too, the precheck before the body included', async () => {
    const team = await newTeam();
    // 5 a second: a token refills in 200 ms, far longer than the few requests between the checks.
    const first = await keyWith(team, { scopes: ['ingest'], rateLimit: { records_per_second: 5, requests_per_second: 100 }, app });
    const sent = await api(app).post('/api/v1/events').set(...bearer(first.apiKey)).send({ events: events(4) }).expect(200);
    expect(sent.headers.ratelimit).to.equal('"records";r=1;t=1');
    const second = await rotate(first);
    const refused = await api(app).post('/api/v1/events').set(...bearer(second.apiKey)).send({ events: events(3) }).expect(429);
    expect(errorOf(refused.body).details).to.deep.equal([{ field: 'rate_limit.records_per_second', message: 'is 5' }]);
    await api(app).post('/api/v1/events').set(...bearer(second.apiKey)).send({ events: events(1) }).expect(200);
    const third = await rotate(second);
    // Not JSON at all: refused by the holder's empty bucket before the parser would have said so.
    const early = await api(app).post('/api/v1/events').set(...bearer(third.apiKey)).type('json').send('{not json').expect(429);
    expect(errorOf(early.body).code).to.equal('rate_limited');
  });

  it('two keys of a team that are not one rotation chain keep separate buckets', async () => {
    const team = await newTeam();
    const one = await keyWith(team, { scopes: ['read'], rateLimit: { requests_per_second: 2 }, app });
    const other = await keyWith(team, { scopes: ['read'], rateLimit: { requests_per_second: 2 }, app });
    expect(await holderOf(one)).to.equal(one.id);
    expect(await holderOf(other)).to.equal(other.id);
    await read(one).expect(200);
    await read(one).expect(200);
    await read(one).expect(429);
    await read(other).expect(200);
    // The other key's rotation carries the other key's bucket, not the first's.
    const rotated = await rotate(other);
    expect(await holderOf(rotated)).to.equal(other.id);
    await read(rotated).expect(429);
  });

  it('a key rotated twice keeps the first key as its holder, and its bucket', async () => {
    const team = await newTeam();
    const first = await keyWith(team, { scopes: ['read'], rateLimit: { requests_per_second: 3 }, app });
    expect(await holderOf(first)).to.equal(first.id);
    await read(first).expect(200);
    const second = await rotate(first);
    expect(await holderOf(second)).to.equal(first.id);
    const third = await rotate(second);
    expect(await holderOf(third)).to.equal(first.id);
    const row = await testEnv().deps.db.get('SELECT holder_id FROM api_keys WHERE id = ?', [third.id]);
    expect(row).to.deep.equal({ holder_id: first.id });
    await read(third).expect(429);
    // The team's first key, made with the team, is its own holder.
    expect((await findKeyOwner(testEnv().deps.db, team.apiKey))!.holderId).to.match(/^key_/).and.not.equal(first.id);
  });

  it("the routes count in AppDeps.rateLimiter's buckets (the instance the BI interface is given)", async () => {
    const team = await newTeam();
    const key = await keyWith(team, { scopes: ['read'], rateLimit: { requests_per_second: 2 }, app });
    const { rateLimiter } = testEnv().deps;
    // What a BI query will do: take from the holder's requests bucket through the shared instance.
    expect((await rateLimiter.take(await holderOf(key), 'requests', { requestsPerSecond: 2, recordsPerSecond: null }, 2))!.allowed).to.equal(true);
    // The service's own app, whose routes draw on that instance.
    await api().get('/api/v1/agents').set(...bearer(key.apiKey)).expect(429);
  });

  it('keys that existed before migration 015 are their own holders', async () => {
    const dir = tempDir('holder-migration');
    const before = tempDir('holder-migrations-before');
    for (const m of readMigrations(path.join(SCHEMA_DIR, 'sqlite')).filter((m) => m.version < 15)) fs.writeFileSync(path.join(before, m.name), m.sql);
    const db = openRegistry(dir);
    try {
      migrateRegistry(db, before);
      db.prepare('INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)').run('team_old', 'old', 1);
      const apiKeys = [generateApiKey(), generateApiKey()];
      apiKeys.forEach((apiKey, i) =>
        db.prepare('INSERT INTO api_keys (id, team_id, prefix, key_hash, created_at, scopes) VALUES (?, ?, ?, ?, ?, ?)').run(`key_old${i}`, 'team_old', visiblePrefix(apiKey), hashApiKey(apiKey), 1, 'read'),
      );
      expect(migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'))).to.include('015_key_holders.sql');
      expect(db.prepare('SELECT id, holder_id FROM api_keys ORDER BY id').all()).to.deep.equal([
        { id: 'key_old0', holder_id: 'key_old0' },
        { id: 'key_old1', holder_id: 'key_old1' },
      ]);
      const sql = sqliteDatabase(db);
      expect(await Promise.all(apiKeys.map(async (apiKey) => (await findKeyOwner(sql, apiKey))!.holderId))).to.deep.equal(['key_old0', 'key_old1']);
    } finally {
      db.close();
    }
  });
});
