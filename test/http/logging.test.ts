import { expect } from 'chai';
import { api, newTeam, testEnv } from '../helpers/context.js';

describe('request logging', () => {
  it('logs method, path, status, duration, team id and request id, and returns the id', async () => {
    const team = await newTeam();
    const res = await api().get('/api/v1/team?x=1').set(...team.auth).expect(200);
    const requestId = res.headers['x-request-id'];
    expect(requestId).to.match(/^[0-9a-f-]{36}$/);
    const line = testEnv().logLines.find((l) => (l.req as { id?: string } | undefined)?.id === requestId);
    expect(line).to.not.equal(undefined);
    expect(line!.req).to.deep.equal({ id: requestId, method: 'GET', path: '/api/v1/team' });
    expect(line!.res).to.deep.equal({ statusCode: 200 });
    expect(line!.responseTime).to.be.a('number');
    expect(line!.teamId).to.equal(team.teamId);
  });

  it('keeps a plain client request id and replaces a hostile one', async () => {
    const team = await newTeam();
    const kept = await api().get('/api/v1/team').set(...team.auth).set('X-Request-Id', 'trace-abc.123').expect(200);
    expect(kept.headers['x-request-id']).to.equal('trace-abc.123');
    const replaced = await api().get('/api/v1/team').set(...team.auth).set('X-Request-Id', 'bad id\twith "quotes"').expect(200);
    expect(replaced.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
  });

  it('never writes the Authorization header or the key to the log', async () => {
    const team = await newTeam();
    await api().get('/api/v1/team').set(...team.auth).expect(200);
    await api().post('/api/v1/team/rotate-key').set(...team.auth).expect(200);
    await api().get('/api/v1/team').set('Authorization', 'Bearer ss_unknown-key-that-should-not-be-logged').expect(401);
    const all = JSON.stringify(testEnv().logLines);
    expect(all).not.to.include(team.apiKey);
    expect(all).not.to.include('ss_unknown-key-that-should-not-be-logged');
    // No header by that name, and no bearer token (the word itself is in paths: /authorizations).
    expect(all).not.to.match(/"authorization"\s*:/i);
    expect(all.toLowerCase()).not.to.include('bearer');
  });
});
