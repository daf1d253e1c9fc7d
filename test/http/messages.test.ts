import { expect } from 'chai';
import { api, errorOf, newTeam, testEnv } from '../helpers/context.js';

/** Error texts people read: each names the field as the route's body names it, in plain words. */
describe('error messages', () => {
  const record = { agent_id: 'a1', endpoint: 'https://api.example.com/x', method: 'POST', amount: '0.01' };

  it('POST /events names events[i].field, and one problem is not "1 problems"', async () => {
    const team = await newTeam();
    const res = await api().post('/api/v1/events').set(...team.auth).send({ events: [{ ...record, amount: 'lots' }] }).expect(400);
    const { message } = errorOf(res.body);
    expect(message).to.include('events[0].amount');
    expect(message).not.to.include('records[');
    expect(message).not.to.match(/\b1 problems\b/);
  });

  it('POST /audit/batch names records[i].field and counts problems in words that agree', async () => {
    const team = await newTeam();
    const res = await api()
      .post('/api/v1/audit/batch')
      .set(...team.auth)
      .send({ records: [{ ...record, id: 'r1', amount: 'lots' }, { ...record, id: 'r2', endpoint: 'ftp://x' }] })
      .expect(400);
    const { message } = errorOf(res.body);
    expect(message).to.include('records[0].amount');
    expect(message).to.include('2 problems');
  });

  it('a nullable field of the wrong type says "must be a string or null", not "must be string,null"', async () => {
    const team = await newTeam();
    const res = await api().post('/api/v1/events').set(...team.auth).send({ events: [{ ...record, team: 5 }] }).expect(400);
    const details = errorOf(res.body).details as { field: string; message: string }[];
    const team5 = details.find((d) => d.field === 'team');
    expect(team5?.message).to.equal('must be a string or null');
    expect(JSON.stringify(res.body)).not.to.include('string,null');
  });

  for (const body of ['null', '"x"', '42', 'true']) {
    it(`a body of ${body} is "must be a JSON object", not "not valid JSON"`, async () => {
      const team = await newTeam();
      const res = await api().post('/api/v1/events').set(...team.auth).set('Content-Type', 'application/json').send(body).expect(400);
      const error = errorOf(res.body);
      expect(error.code).to.equal('validation_failed');
      expect(error.message).to.equal('Request body must be a JSON object');
      expect(error.details).to.deep.equal([{ field: 'body', message: 'must be a JSON object' }]);
    });
  }

  it('a body that is not JSON at all is still invalid_json', async () => {
    const team = await newTeam();
    const res = await api().post('/api/v1/events').set(...team.auth).set('Content-Type', 'application/json').send('{"events": [').expect(400);
    expect(errorOf(res.body).code).to.equal('invalid_json');
  });

  it('an over-long URL says it is too long, not that it is not a URL', async () => {
    const team = await newTeam();
    const endpoint = `https://api.example.com/${'a'.repeat(5000)}`;
    const res = await api().post('/api/v1/events').set(...team.auth).send({ events: [{ ...record, endpoint }] }).expect(400);
    const details = errorOf(res.body).details as { field: string; message: string }[];
    expect(details.find((d) => d.field === 'endpoint')?.message).to.equal('is too long: at most 4096 characters');
  });
});

describe('rejected records', () => {
  it('are logged at warn with the team, index, field and reason, never the record, and counted in /metrics', async () => {
    const team = await newTeam();
    const secret = 'sk-live-do-not-log-me';
    const metricsBefore = (await api().get('/metrics').expect(200)).text;
    const invalidBefore = Number(/spendscope_ingest_records_total\{outcome="invalid"\} (\d+)/.exec(metricsBefore)?.[1] ?? 0);
    const res = await api()
      .post('/api/v1/events')
      .set(...team.auth)
      .send({
        events: [
          { agent_id: 'a1', endpoint: 'https://api.example.com/x', method: 'POST', amount: '0.01' },
          { agent_id: 'a1', endpoint: 'https://api.example.com/x', method: 'POST', amount: 'lots', task_id: secret },
        ],
      })
      .expect(200);
    expect(res.body.ingested).to.equal(1);
    const requestId = res.headers['x-request-id'];
    const line = testEnv().logLines.find((l) => l.msg === 'ingest: records rejected' && (l.req as { id?: string } | undefined)?.id === requestId);
    expect(line, 'a warning for the rejected record').to.not.equal(undefined);
    expect(line!.level).to.equal(40);
    expect(line!.teamId).to.equal(team.teamId);
    expect(line!.rejectedRecords).to.equal(1);
    expect(line!.errors).to.deep.equal([{ index: 1, field: 'amount', message: res.body.errors[0].message }]);
    expect(JSON.stringify(testEnv().logLines)).not.to.include(secret);
    const metricsAfter = (await api().get('/metrics').expect(200)).text;
    const invalidAfter = Number(/spendscope_ingest_records_total\{outcome="invalid"\} (\d+)/.exec(metricsAfter)?.[1] ?? 0);
    expect(invalidAfter - invalidBefore).to.be.at.least(1);
  });
});
