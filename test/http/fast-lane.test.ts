import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { ErrorRequestHandler } from 'express';
import supertest from 'supertest';
import { FastLane } from '../../src/http/fast-lane.js';
import { api, newTeam, testEnv } from '../helpers/context.js';

/** What a client can tell of an answer, but for what differs on every request (its id, the date). */
function seen(res: supertest.Response) {
  const headers = { ...res.headers };
  for (const name of ['date', 'x-request-id', 'ratelimit']) delete headers[name];
  const text = res.text.replace(/"requestId":"[^"]+"/, '"requestId":"-"');
  return { status: res.status, headers, text };
}

describe('the fast lane: fixed-path routes served without express', () => {
  it('answers as express answers the same route: status, headers and body, errors included', async () => {
    const { auth } = await newTeam('lane');
    // Express still serves a path the lane does not match exactly: with a trailing slash, the same route.
    const both = async (path: string, send: (path: string) => supertest.Test) => [seen(await send(path)), seen(await send(`${path}/`))];
    const cases: [string, string, (path: string) => supertest.Test][] = [
      ['a read', '/api/v1/team', (p) => api().get(p).set(...auth)],
      ['no key (401 with its challenge)', '/api/v1/team', (p) => api().get(p)],
      ['a query parameter with NUL (400)', '/api/v1/team', (p) => api().get(`${p}?x=%00`).set(...auth)],
      ['a bad body (400 naming the field)', '/api/v1/policies', (p) => api().post(p).set(...auth).send({ name: 7 })],
      ['not JSON (400)', '/api/v1/policies', (p) => api().post(p).set(...auth).set('Content-Type', 'application/json').send('{"name":')],
      ['another content type (415)', '/api/v1/policies', (p) => api().post(p).set(...auth).set('Content-Type', 'text/plain').send('name')],
      ['no body (400)', '/api/v1/policies', (p) => api().post(p).set(...auth)],
      ['a body past the limit (413)', '/api/v1/policies', (p) => api().post(p).set(...auth).send({ name: 'x'.repeat(testEnv().config.maxBodyBytes) })],
    ];
    for (const [what, path, send] of cases) {
      const [lane, express] = await both(path, send);
      expect(lane, what).to.deep.equal(express);
    }
    const [lane] = await both('/api/v1/team', (p) => api().get(p).set(...auth));
    expect(lane!.status).to.equal(200);
    expect(lane!.headers['content-type']).to.equal('application/json; charset=utf-8');
  });

  it('an ingest batch and an authorization through the lane: the answer, its request id, its rate headers, and its count by route', async () => {
    const { auth } = await newTeam('lane-ingest');
    const events = [{ id: 'lane-1', agent_id: 'a', endpoint: 'https://api.example.com/x', method: 'POST', amount: '0.01', created_at: Date.now() }];
    const res = await api().post('/api/v1/events').set(...auth).set('X-Request-Id', 'lane-req-1').send({ events });
    expect(res.status).to.equal(200);
    expect(res.body.ingested).to.equal(1);
    expect(res.headers['x-request-id']).to.equal('lane-req-1');
    expect(res.headers['ratelimit-policy']).to.match(/^"records";q=\d+;w=1$/);
    const decided = await api().post('/api/v1/authorizations').set(...auth).send({ agent_id: 'a', endpoint: 'https://api.example.com/x', amount: '0.01' });
    expect(decided.status).to.equal(200);
    expect(decided.body.decision).to.equal('approved');
    const metrics = await api().get('/metrics');
    expect(metrics.text).to.match(/spendscope_http_requests_total\{route="\/api\/v1\/events",method="POST",status="200"\} [1-9]/);
  });

  it('leaves to express what it does not match exactly: a path with an id, HEAD, OPTIONS, an unknown method', async () => {
    const { auth } = await newTeam('lane-rest');
    expect((await api().get('/api/v1/policies/pol_nope').set(...auth)).status).to.equal(404);
    expect((await api().head('/api/v1/team').set(...auth)).status).to.equal(200);
    const options = await api().options('/api/v1/events');
    expect(options.status).to.equal(204);
    expect(options.headers.allow).to.equal('POST, OPTIONS');
    const put = await api().put('/api/v1/events').set(...auth).send({});
    expect(put.status).to.equal(405);
    expect(put.headers.allow).to.equal('POST');
  });

  describe('on its own', () => {
    let server: http.Server;
    let url: string;
    const caught: string[] = [];
    before(async () => {
      const onError: ErrorRequestHandler = (err: Error, _req, res, next) => {
        if (res.headersSent) return next(err);
        caught.push(err.message);
        res.statusCode = 418;
        res.end(err.message);
      };
      const lane = new FastLane([(_req, res, next) => (res.setHeader('X-Prelude', 'ran'), next())], onError);
      lane.add('post', '/echo', [(req, res) => res.end(JSON.stringify({ query: req.query, params: req.params, locals: { ...res.locals } }))]);
      lane.add('get', '/sync', [() => { throw new Error('thrown'); }]);
      lane.add('get', '/async', [async () => { throw new Error('rejected'); }]);
      lane.add('get', '/next-error', [(_req, _res, next) => next(new Error('passed on'))]);
      lane.add('get', '/nobody', []);
      expect(() => lane.add('get', '/things/:id', [])).to.throw(/fixed paths only/);
      server = http.createServer((req, res) => {
        if (!lane.serve(req, res)) res.writeHead(299).end('not the lane');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('serves an exact method and path, after the prelude, with the query parsed', async () => {
      const res = await supertest(url).post('/echo?a=1&b=2&b=3');
      expect(res.status).to.equal(200);
      expect(res.headers['x-prelude']).to.equal('ran');
      expect(JSON.parse(res.text)).to.deep.equal({ query: { a: '1', b: ['2', '3'] }, params: {}, locals: {} });
      for (const [method, path] of [['get', '/echo'], ['post', '/echo/'], ['post', '/ECHO'], ['post', '/echo/more']] as const) {
        expect((await supertest(url)[method](path)).status, `${method} ${path}`).to.equal(299);
      }
    });

    it('hands every failure to the error handler: thrown, rejected, passed to next, or nobody answering', async () => {
      caught.length = 0;
      for (const path of ['/sync', '/async', '/next-error', '/nobody']) {
        expect((await supertest(url).get(path)).status, path).to.equal(418);
      }
      expect(caught).to.deep.equal(['thrown', 'rejected', 'passed on', 'no handler answered /nobody']);
    });
  });
});
