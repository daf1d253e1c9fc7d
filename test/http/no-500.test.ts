/**
 * No input is a 500. Requests generated from a fixed seed across every route (bad paths, queries,
 * bodies, content types, keys) must each be answered below 500, every 4xx in the error shape with
 * the right status for its code, and a 400 naming the field; afterwards the service is healthy and
 * nothing invalid was stored.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/app.js';
import { ERROR_STATUS, type ErrorCode } from '../../src/http/errors.js';
import { ROUTES } from '../../src/routes.js';
import { bearer } from '../helpers/common.js';
import { api, loadedEvents, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { requestArb, type RawRequest } from './bad-input.js';

const RUNS = 5_000;
const SEED = 20261123;

interface Answer {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

function send(port: number, agent: http.Agent, r: RawRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...r.headers };
    if (r.body) headers['Content-Length'] = r.body.length;
    const req = http.request({ host: '127.0.0.1', port, method: r.method, path: r.path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
    });
    req.on('error', reject);
    req.end(r.body);
  });
}

/** What is wrong with an answer, or undefined. */
function problemWith(answer: Answer): string | undefined {
  if (answer.status >= 500) return `answered ${answer.status}: ${answer.body.slice(0, 300)}`;
  if (answer.status < 400) return undefined;
  let parsed: { error?: { code?: string; message?: unknown; requestId?: unknown; details?: unknown } };
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return `a ${answer.status} whose body is not JSON: ${answer.body.slice(0, 200)}`;
  }
  const error = parsed.error;
  if (!error || typeof error.message !== 'string' || typeof error.requestId !== 'string') return `a ${answer.status} not in the error shape: ${answer.body.slice(0, 200)}`;
  if (ERROR_STATUS[error.code as ErrorCode] !== answer.status) return `code ${error.code} answered with ${answer.status}`;
  if (answer.status === 400) {
    const details = error.details as { field?: unknown; message?: unknown }[] | undefined;
    if (!Array.isArray(details) || details.length === 0) return `a 400 without details naming the field: ${answer.body.slice(0, 200)}`;
    for (const d of details) {
      if (typeof d.field !== 'string' || d.field === '' || typeof d.message !== 'string') return `a 400 detail without a field: ${JSON.stringify(d)}`;
    }
  }
  return undefined;
}

describeOnEachRegistry('no 500 for any input', function () {
  this.timeout(300_000);
  let server: http.Server;
  let port: number;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  // The operator routes are mounted (and fuzzed, with the operator key) only with a key configured.
  const operatorKey = crypto.randomBytes(32).toString('hex');
  before(async () => {
    const deps = testEnv().deps;
    const app = createApp({ ...deps, config: { ...deps.config, operatorKeyHash: crypto.createHash('sha256').update(operatorKey).digest() } }, { validateResponses: true });
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    agent.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });

  it('the inputs that used to be 500s, one by one, are 400s naming the field', async () => {
    const team = await newTeam('named');
    const record = { agent_id: 'a1', endpoint: 'https://x.example/p', method: 'GET', amount: '0.1' };
    // [method, path, body text, the field the 400 names]
    const cases: [string, string, string | undefined, string][] = [
      ['GET', '/api/v1/agents/%zz', undefined, 'path'],
      ['GET', '/api/v1/policies/%ED%A0%80', undefined, 'path'], // a lone surrogate, percent-encoded
      ['PATCH', '/api/v1/alerts/%u0041', '{}', 'path'],
      ['DELETE', '/api/v1/keys/%E0%A4', undefined, 'path'],
      ['GET', '/api/v1/policies?limit=-1e400', undefined, 'limit'],
      ['GET', '/api/v1/agents?limit=1e400', undefined, 'limit'],
      ['GET', '/api/v1/alerts?limit=0x10', undefined, 'limit'],
      ['GET', '/api/v1/analytics/by-network?to=9007199254740993', undefined, 'to'],
      ['GET', '/api/v1/analytics/timeseries?from=9999999999999999', undefined, 'from'],
      ['POST', '/api/v1/events', JSON.stringify({ events: [{ ...record, agent_id: '\ud800' }] }).replace('\\\\ud800', '\\ud800'), 'events[0].agent_id'],
      ['POST', '/api/v1/events', `{"events": [${JSON.stringify({ ...record, status_code: 0 }).replace('"status_code":0', '"status_code":123456789012345678901234567890')}]}`, 'events[0].status_code'],
      ['POST', '/api/v1/events', `{"events": [${JSON.stringify(record).replace('}', ',"created_at":1e400}')}]}`, 'events[0].created_at'],
      ['POST', '/api/v1/events', `{"events": [${JSON.stringify(record).replace('}', ',"__proto__":{"admin":true}}')}]}`, 'events[0].__proto__'],
      ['POST', '/api/v1/events', `{"events": [${JSON.stringify({ ...record, metadata: { a: { constructor: 1 } } })}]}`, 'events[0].metadata.a.constructor'],
      ['POST', '/api/v1/policies', '{"name":"p","limits":[{"kind":"daily","amount":"1","constructor":{}}]}', 'limits[0].constructor'],
      ['POST', '/api/v1/agents', '{"external_id":{"__proto__":[]},"name":"n"}', 'external_id.__proto__'],
      ['POST', '/api/v1/agents', '{"external_id":[],"name":"n"}', 'external_id'],
      ['POST', '/api/v1/audit/query', '{"constructor":{"prototype":1}}', 'constructor'],
      ['POST', '/api/v1/policies', '[]', 'body'],
      ['POST', '/api/v1/keys', '{"name":"k","scopes":["read"],"rate_limit":{"records_per_second":1e400}}', 'rate_limit.records_per_second'],
      ['POST', '/api/v1/events', '{"events": [', 'body'],
      // NUL, which PostgreSQL's text cannot hold: refused on both stores alike, naming where.
      ['POST', '/api/v1/events', JSON.stringify({ events: [{ ...record, agent_id: 'a\u0000b' }] }), 'events[0].agent_id'],
      ['POST', '/api/v1/policies', JSON.stringify({ name: 'p\u0000', limits: [{ kind: 'daily', amount: '1' }] }), 'name'],
      ['POST', '/api/v1/policies', JSON.stringify({ name: 'p', agents: ['a', '\u0000'], limits: [{ kind: 'daily', amount: '1' }] }), 'agents[1]'],
      ['GET', '/api/v1/policies/pol%00x', undefined, 'id'],
      ['GET', '/api/v1/alerts?agent=a%00', undefined, 'agent'],
    ];
    const agent = new http.Agent({ keepAlive: false });
    for (const [method, path, body, field] of cases) {
      const answer = await send(port, agent, {
        method,
        path,
        headers: { Authorization: `Bearer ${team.apiKey}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        body: body === undefined ? undefined : Buffer.from(body),
        route: path,
      });
      const label = `${method} ${path} ${body ?? ''}`;
      expect(answer.status, `${label}: ${answer.body}`).to.equal(400);
      expect(problemWith(answer), label).to.equal(undefined);
      // A batch's details name each record by index and its field.
      const details = (JSON.parse(answer.body) as { error: { details: { field: string; index?: number }[] } }).error.details;
      expect(details.map((d) => (d.index === undefined ? d.field : `events[${d.index}].${d.field}`)), `${label}: ${answer.body}`).to.include(field);
    }
    agent.destroy();
  });

  it(`${RUNS.toLocaleString('en-US')} generated requests across every route (seed ${SEED}): none 5xx, every 4xx in the error shape; healthy after; nothing invalid stored`, async () => {
    const team = await newTeam('fuzz');
    let key = team.apiKey;
    // Rate limits would turn most of the run into 429s; this test is about input, not rates.
    const routes = ROUTES.filter((r) => r.operationId !== 'getMetrics');
    const schemas = testEnv().schemas.schemas as Map<string, { properties?: Record<string, unknown> }>;
    let stored = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requestArb(routes, schemas, (spec) => (spec.operator ? operatorKey : key)), async (request) => {
        const answer = await send(port, agent, request);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        const problem = problemWith(answer);
        if (problem) throw new Error(`${request.method} ${request.path} (${request.route}) ${request.headers['Content-Type'] ?? ''} ${request.body?.toString('utf8').slice(0, 300) ?? ''}: ${problem}`);
        if (answer.status === 200 && /\/(events|audit\/batch)$/.test(request.path.split('?')[0]!)) {
          // ingested counts the records taken; duplicates and conflicts (an id stored before with other content) were not stored again.
          const result = JSON.parse(answer.body) as { ingested: number; duplicates: number; conflicts: number };
          stored += result.ingested - result.duplicates - result.conflicts;
        }
        // A successful rotation replaced the key: go on with the new one.
        if (answer.status === 200 && request.path.split('?')[0]!.endsWith('/team/rotate-key') && request.headers.Authorization === `Bearer ${key}`) {
          key = (JSON.parse(answer.body) as { apiKey: string }).apiKey;
        }
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    const auth = bearer(key);
    // Every status was seen for a reason: the run was not all 401s or 404s.
    expect([...statuses.keys()].sort()).to.include.members([200, 400, 401, 404, 405]);
    expect(statuses.get(200)).to.be.above(RUNS / 20);

    // Healthy afterwards.
    await api().get('/healthz').expect(200);
    // Nothing invalid stored: every record reads back valid under the schema that admitted it, and
    // ClickHouse holds exactly what was acknowledged. Every list answers, and the test app checks
    // each answer against its schema (a stored invalid value would be a 500 here).
    const store = await loadedEvents(team.teamId);
    const count = await store.query(`SELECT count() AS n FROM events WHERE team_id = {team:String}`, { team: team.teamId });
    expect(Number((count as { n: string }[])[0]!.n)).to.equal(stored);
    expect(stored).to.be.above(0);
    const records = await api().post('/api/v1/audit/query').set(...auth).send({ limit: 100_000 }).expect(200);
    expect(records.body).to.have.length(stored);
    for (const record of records.body as Record<string, unknown>[]) {
      const { id: _id, ...fields } = record;
      expect(testEnv().schemas.problems('audit-record.json', fields), JSON.stringify(record)).to.deep.equal([]);
    }
    for (const path of ['/api/v1/policies?limit=100', '/api/v1/agents?limit=100', '/api/v1/alerts?limit=100', '/api/v1/keys', '/api/v1/team', '/api/v1/analytics/summary']) {
      await api().get(path).set(...auth).expect(200);
    }
  });
});
