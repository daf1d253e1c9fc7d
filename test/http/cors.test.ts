/** CORS_ORIGINS lets browser clients of those origins call the API; OPTIONS is never a 405. */
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { api, appWith, newTeam, testEnv } from '../helpers/context.js';

describe('CORS and OPTIONS', () => {
  const ORIGIN = 'https://app.example.com';
  const app = () => appWith([], { config: { ...testEnv().config, corsOrigins: [ORIGIN, 'http://localhost:5173'] } });

  it('answers a preflight from an allowed origin: 204, without a key, with the methods and headers a client needs', async () => {
    const res = await api(app())
      .options('/api/v1/audit/batch')
      .set('Origin', ORIGIN)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization, content-type')
      .expect(204);
    expect(res.headers['access-control-allow-origin']).to.equal(ORIGIN);
    expect(res.headers['access-control-allow-methods']).to.include('POST');
    expect(res.headers['access-control-allow-headers']).to.include('Authorization').and.include('Content-Type');
    expect(res.headers.vary).to.include('Origin');
  });

  it('a real request from an allowed origin carries the CORS headers, errors included', async () => {
    const team = await newTeam();
    const ok = await api(app()).get('/api/v1/team').set('Origin', ORIGIN).set(...team.auth).expect(200);
    expect(ok.headers['access-control-allow-origin']).to.equal(ORIGIN);
    expect(ok.headers['access-control-expose-headers']).to.include('X-Request-Id');
    const denied = await api(app()).get('/api/v1/team').set('Origin', ORIGIN).expect(401);
    expect(denied.headers['access-control-allow-origin']).to.equal(ORIGIN);
  });

  it('another origin gets no CORS headers (the browser keeps the answer from it)', async () => {
    const res = await api(app()).options('/api/v1/team').set('Origin', 'https://evil.example').set('Access-Control-Request-Method', 'GET').expect(204);
    expect(res.headers['access-control-allow-origin']).to.equal(undefined);
  });

  it('by default (no CORS_ORIGINS) no origin is allowed', async () => {
    expect(testEnv().config.corsOrigins).to.deep.equal([]);
    const res = await api().options('/api/v1/team').set('Origin', ORIGIN).set('Access-Control-Request-Method', 'GET').expect(204);
    expect(res.headers['access-control-allow-origin']).to.equal(undefined);
  });

  it('"*" allows any origin', async () => {
    const any = appWith([], { config: { ...testEnv().config, corsOrigins: ['*'] } });
    const res = await api(any).options('/v1/agents').set('Origin', 'https://anything.example').set('Access-Control-Request-Method', 'POST').expect(204);
    expect(res.headers['access-control-allow-origin']).to.equal('*');
  });

  it('OPTIONS on any route is 204 with Allow, never 405; other unknown methods still are 405', async () => {
    for (const path of ['/api/v1/policies', '/v1/agents/x', '/audit/batch', '/healthz', '/api/v1/alerts/abc']) {
      const res = await api().options(path).expect(204);
      expect(res.headers.allow, path).to.include('OPTIONS');
    }
    expect((await api().options('/api/v1/policies').expect(204)).headers.allow).to.equal('POST, GET, HEAD, OPTIONS');
    await api().put('/api/v1/policies').expect(405);
  });

  it('CORS_ORIGINS is read as a comma list and checked', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example, http://localhost:5173' }).corsOrigins).to.deep.equal(['https://a.example', 'http://localhost:5173']);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://a.example/app/' })).to.throw(/CORS_ORIGINS/);
  });
});
