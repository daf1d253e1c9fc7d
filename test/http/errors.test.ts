import { expect } from 'chai';
import { ApiError } from '../../src/http/errors.js';
import { defineRoute } from '../../src/http/routes.js';
import { SchemaRegistry } from '../../src/http/validation.js';
import { api, appWith, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import fs from 'node:fs';
import path from 'node:path';
import { SCHEMA_DIR } from '../../src/paths.js';
import { tempDir } from '../helpers/processes.js';

/** The project's schemas plus one body schema for the test-only routes below. */
function schemasWithProbe(): SchemaRegistry {
  const dir = tempDir('schemas');
  for (const file of fs.readdirSync(path.join(SCHEMA_DIR, 'api'))) {
    fs.copyFileSync(path.join(SCHEMA_DIR, 'api', file), path.join(dir, file));
  }
  fs.writeFileSync(
    path.join(dir, 'probe-body.json'),
    JSON.stringify({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'probe-body.json',
      type: 'object',
      required: ['name', 'count'],
      properties: {
        name: { type: 'string', minLength: 1 },
        count: { type: 'integer', minimum: 0 },
        items: { type: 'array', items: { type: 'object', properties: { amount: { type: 'string', pattern: '^\\d+$' } } } },
      },
      additionalProperties: false,
    }),
  );
  return new SchemaRegistry(dir);
}

// Routes that exist only in this test: real mounting, real middleware, so every error path runs.
const echo = defineRoute<{ name: string }>({
  method: 'post',
  path: '/test/echo',
  operationId: 'testEcho',
  summary: 'echo',
  tag: 'test',
  body: 'probe-body.json',
  responses: { 200: { description: 'echo' } },
  handler: ({ body }) => ({ body }),
});
const boom = defineRoute({
  method: 'get',
  path: '/test/boom',
  operationId: 'testBoom',
  summary: 'throws',
  tag: 'test',
  responses: { 200: { description: 'never' } },
  handler: () => {
    throw new Error('secret internal detail: connection string postgres://u:p@db');
  },
});
const conflict = defineRoute({
  method: 'get',
  path: '/test/conflict',
  operationId: 'testConflict',
  summary: 'domain error',
  tag: 'test',
  responses: { 200: { description: 'never' } },
  handler: () => {
    throw new ApiError('conflict', 'already there', { id: 'x' });
  },
});

/**
 * A query the run's real ClickHouse refuses for being too big to answer now (a memory limit far
 * below what it needs: MEMORY_LIMIT_EXCEEDED), as a busy server refuses a read; or refuses as
 * wrong (an unknown table: a fault of ours).
 */
const overloaded = defineRoute({
  method: 'get',
  path: '/test/overloaded',
  operationId: 'testOverloaded',
  summary: 'ClickHouse refuses for now',
  tag: 'test',
  responses: { 200: { description: 'never' } },
  handler: async ({ deps }) => {
    // The limit in the query's own SETTINGS clause: it ends with the query (a SET would stay on the engine's session).
    await deps.events.query('SELECT length(groupArray(number)) AS n FROM numbers(20000000) SETTINGS max_memory_usage = 10000000');
    return { body: {} };
  },
});
const wrongQuery = defineRoute({
  method: 'get',
  path: '/test/wrong-query',
  operationId: 'testWrongQuery',
  summary: 'ClickHouse refuses as wrong',
  tag: 'test',
  responses: { 200: { description: 'never' } },
  handler: async ({ deps }) => {
    await deps.events.query('SELECT count() FROM no_such_table_here');
    return { body: {} };
  },
});

describeOnEachRegistry('errors', () => {
  const app = () => appWith([echo, boom, conflict, overloaded, wrongQuery], { schemas: schemasWithProbe() });

  it('accepts a valid JSON body', async () => {
    const team = await newTeam();
    const res = await api(app()).post('/api/v1/test/echo').set(...team.auth).send({ name: 'x', count: 1 }).expect(200);
    expect(res.body).to.deep.equal({ name: 'x', count: 1 });
  });

  it('malformed JSON: 400 invalid_json', async () => {
    const team = await newTeam();
    const res = await api(app())
      .post('/api/v1/test/echo')
      .set(...team.auth)
      .set('Content-Type', 'application/json')
      .send('{"name": "x",')
      .expect(400);
    expect(errorOf(res.body).code).to.equal('invalid_json');
  });

  it('a JSON value that is not an object or array: 400 validation_failed, "must be a JSON object" (it is valid JSON)', async () => {
    const team = await newTeam();
    const res = await api(app()).post('/api/v1/test/echo').set(...team.auth).set('Content-Type', 'application/json').send('"just a string"').expect(400);
    expect(errorOf(res.body)).to.include({ code: 'validation_failed', message: 'Request body must be a JSON object' });
  });

  it('validation failure: 400 naming each field', async () => {
    const team = await newTeam();
    const res = await api(app())
      .post('/api/v1/test/echo')
      .set(...team.auth)
      .send({ name: '', extra: 1, items: [{ amount: '1' }, { amount: '-2' }] })
      .expect(400);
    const error = errorOf(res.body);
    expect(error.code).to.equal('validation_failed');
    const fields = (error.details as { field: string }[]).map((d) => d.field);
    expect(fields).to.include.members(['name', 'count', 'extra', 'items[1].amount']);
    expect(error.message).to.match(/name|count|extra|items/);
  });

  it('no body on a JSON route: 400 naming the body', async () => {
    const team = await newTeam();
    const res = await api(app()).post('/api/v1/test/echo').set(...team.auth).expect(400);
    const error = errorOf(res.body);
    expect(error.code).to.equal('validation_failed');
    expect(error.details).to.deep.equal([{ field: 'body', message: 'is required' }]);
  });

  it('body over MAX_BODY_BYTES: 413', async () => {
    const team = await newTeam();
    const big = { name: 'x'.repeat(testEnv().config.maxBodyBytes + 10), count: 1 };
    const res = await api(app()).post('/api/v1/test/echo').set(...team.auth).send(big).expect(413);
    expect(errorOf(res.body).code).to.equal('payload_too_large');
  });

  it('wrong content type on a JSON route: 415', async () => {
    const team = await newTeam();
    const res = await api(app())
      .post('/api/v1/test/echo')
      .set(...team.auth)
      .set('Content-Type', 'text/plain')
      .send('name=x')
      .expect(415);
    expect(errorOf(res.body).code).to.equal('unsupported_media_type');
  });

  it('unknown route: 404, under the API prefixes and elsewhere', async () => {
    const team = await newTeam();
    for (const path of ['/api/v1/nothing-here', '/v1/nothing', '/nothing', '/api/v2/team']) {
      const res = await api().get(path).set(...team.auth).expect(404);
      expect(errorOf(res.body).code).to.equal('not_found');
    }
  });

  it('unknown method on a known path: 405 with Allow', async () => {
    const team = await newTeam();
    const res = await api().delete('/api/v1/team').set(...team.auth).expect(405);
    expect(errorOf(res.body).code).to.equal('method_not_allowed');
    expect(res.headers.allow).to.equal('GET, PATCH');
    const post = await api().get('/v1/team/rotate-key').set(...team.auth).expect(405);
    expect(post.headers.allow).to.equal('POST');
  });

  it('a domain error keeps its code, status and details', async () => {
    const team = await newTeam();
    const res = await api(app()).get('/api/v1/test/conflict').set(...team.auth).expect(409);
    expect(errorOf(res.body)).to.include({ code: 'conflict', message: 'already there' });
    expect(res.body.error.details).to.deep.equal({ id: 'x' });
  });

  it('unexpected error: 500 without internals, logged with the stack', async () => {
    const team = await newTeam();
    const res = await api(app()).get('/api/v1/test/boom').set(...team.auth).expect(500);
    const error = errorOf(res.body);
    expect(error.code).to.equal('internal_error');
    expect(JSON.stringify(res.body)).not.to.include('secret internal detail');
    expect(error.requestId).to.equal(res.headers['x-request-id']);
    const line = testEnv().logLines.find((l) => (l.req as { id?: string } | undefined)?.id === error.requestId);
    expect(line, 'request log line').to.not.equal(undefined);
    expect(line!.level).to.equal(50);
    expect(JSON.stringify(line!.err)).to.include('secret internal detail').and.include('at ');
  });

  it('ClickHouse refusing a read for now (over a memory limit): 503 with Retry-After, not 500; a query it finds wrong is still a 500', async () => {
    const team = await newTeam();
    const res = await api(app()).get('/api/v1/test/overloaded').set(...team.auth).expect(503);
    expect(errorOf(res.body).code).to.equal('store_unavailable');
    expect(res.headers['retry-after']).to.equal('2');
    const line = testEnv().logLines.find((l) => (l.req as { id?: string } | undefined)?.id === errorOf(res.body).requestId);
    expect(JSON.stringify(line?.err), 'the log keeps what ClickHouse said').to.match(/Code: 241\.|"code":"241"/);
    const wrong = await api(app()).get('/api/v1/test/wrong-query').set(...team.auth).expect(500);
    expect(errorOf(wrong.body).code).to.equal('internal_error');
  });
});
