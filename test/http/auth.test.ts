import { expect } from 'chai';
import { api, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';

describeOnEachRegistry('auth', () => {
  it('accepts a valid key under both path forms', async () => {
    const team = await newTeam();
    for (const prefix of ['/api/v1', '/v1']) {
      const res = await api().get(`${prefix}/team`).set(...team.auth).expect(200);
      expect(res.body.id).to.equal(team.teamId);
    }
  });

  const cases: [string, Record<string, string>][] = [
    ['no Authorization header', {}],
    ['a non-Bearer scheme', { Authorization: 'Basic dXNlcjpwYXNz' }],
    ['an empty Bearer value', { Authorization: 'Bearer ' }],
    ['an unknown key', { Authorization: 'Bearer ss_this-key-was-never-issued-by-anyone' }],
    ['the SDK default key "anonymous"', { Authorization: 'Bearer anonymous' }],
  ];
  for (const [name, headers] of cases) {
    it(`answers 401 in the error shape for ${name}`, async () => {
      const res = await api().get('/api/v1/team').set(headers).expect(401);
      expect(errorOf(res.body).code).to.equal('unauthorized');
      expect(res.headers['www-authenticate']).to.match(/^Bearer/);
    });
  }

  it('stores keys only as SHA-256 hashes with a short visible prefix', async () => {
    const team = await newTeam();
    const rows = await testEnv().deps.db.all('SELECT * FROM api_keys WHERE team_id = ?', [team.teamId]);
    expect(rows).to.have.length(1);
    const stored = JSON.stringify(rows);
    expect(stored).not.to.include(team.apiKey);
    expect(rows[0]!.key_hash).to.match(/^[0-9a-f]{64}$/);
    expect(team.apiKey.startsWith(String(rows[0]!.prefix))).to.equal(true);
    expect(String(rows[0]!.prefix).length).to.be.lessThan(team.apiKey.length / 3);
  });

  it('issues keys with at least 128 random bits', async () => {
    const a = (await newTeam()).apiKey;
    const b = (await newTeam()).apiKey;
    expect(a).not.to.equal(b);
    // ss_ + base64url of 32 bytes: 43 characters of 6 bits each.
    expect(a).to.match(/^ss_[A-Za-z0-9_-]{43}$/);
  });
});
