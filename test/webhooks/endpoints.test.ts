/** Webhook endpoints: create with a secret shown once, list, change, delete, rotate; safe URLs only. */
import { expect } from 'chai';
import { isPrivateAddress, urlProblem } from '../../src/webhooks/address.js';
import { bearer, keyWith, type Team } from '../helpers/common.js';
import { api, appWith, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';

/** The shared app lets webhooks point at this machine (local receivers); this one has the defaults. */
const localApp = () => testEnv().app;
const strictApp = () => appWith([], { config: { ...testEnv().deps.config, webhooks: { ...testEnv().deps.config.webhooks, allowHttp: false, allowPrivate: false } } });

function create(team: Team, body: object, app = localApp()) {
  return api(app).post('/api/v1/webhooks').set(...team.auth).send(body);
}

describeOnEachRegistry('webhook endpoints', function () {
  this.timeout(30_000);

  it('a standard endpoint gets a whsec_ secret shown once; GET never shows it; list, change, delete', async () => {
    const team = await newTeam();
    const app = localApp();
    const res = await create(team, { url: 'http://127.0.0.1:9/hook', events: ['alert.opened'], description: 'on-call' }, app).expect(201);
    expect(res.headers['cache-control']).to.equal('no-store');
    expect(res.body.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(res.body.secret.slice(6), 'base64')).to.have.length(32);
    expect(res.body).to.include({ url: 'http://127.0.0.1:9/hook', format: 'standard', active: true, description: 'on-call', disabledAt: null });
    const id = res.body.id as string;
    expect(res.headers.location).to.equal(`/api/v1/webhooks/${id}`);

    const one = await api(app).get(`/api/v1/webhooks/${id}`).set(...team.auth).expect(200);
    expect(one.body).to.not.have.property('secret');
    const list = await api(app).get('/api/v1/webhooks').set(...team.auth).expect(200);
    expect(list.body.data.map((w: { id: string }) => w.id)).to.deep.equal([id]);
    expect(JSON.stringify(list.body)).to.not.include(res.body.secret);

    const patched = await api(app).patch(`/api/v1/webhooks/${id}`).set(...team.auth).send({ events: ['alert.opened', 'alert.resolved'], active: false }).expect(200);
    expect(patched.body).to.include({ active: false });
    expect(patched.body.events).to.deep.equal(['alert.opened', 'alert.resolved']);
    await api(app).patch(`/api/v1/webhooks/${id}`).set(...team.auth).send({ format: 'slack' }).expect(400);

    const log = (await api(app).get('/api/v1/audit-log?resource_type=webhook').set(...team.auth).expect(200)).body.data;
    expect(log.map((c: { action: string }) => c.action)).to.deep.equal(['webhook.update', 'webhook.create']);
    expect(JSON.stringify(log)).to.not.include(res.body.secret);

    await api(app).delete(`/api/v1/webhooks/${id}`).set(...team.auth).expect(204);
    await api(app).get(`/api/v1/webhooks/${id}`).set(...team.auth).expect(404);
    // Another team sees none of it.
    await api(app).get(`/api/v1/webhooks/${id}`).set(...(await newTeam()).auth).expect(404);
  });

  it('rotate-secret returns a new secret once and keeps the old one signing for 24 hours; a slack endpoint has none', async () => {
    const team = await newTeam();
    const app = localApp();
    const created = (await create(team, { url: 'http://127.0.0.1:9/hook', events: ['alert.opened'] }, app).expect(201)).body;
    const rotated = await api(app).post(`/api/v1/webhooks/${created.id}/rotate-secret`).set(...team.auth).expect(200);
    expect(rotated.body.secret).to.match(/^whsec_/).and.not.equal(created.secret);
    expect(Date.parse(rotated.body.secretRotatedAt)).to.be.closeTo(Date.now(), 5_000);
    const row = (await testEnv().deps.db.get<{ previous_secret: string; previous_secret_until: number | string }>(
      'SELECT previous_secret, previous_secret_until FROM webhook_endpoints WHERE id = ?',
      [created.id],
    ))!;
    // Stored sealed (src/stores/secrets.ts): it opens, for this row and column, to the secret before.
    expect(row.previous_secret).to.match(/^enc:v1:[0-9a-f]{8}:/).and.not.include(created.secret.slice(6));
    expect(testEnv().deps.secrets.open(row.previous_secret, `webhook_endpoints/${created.id}/previous_secret`)).to.equal(created.secret);
    expect(Number(row.previous_secret_until) - Date.parse(rotated.body.secretRotatedAt)).to.equal(24 * 3_600_000);

    const slack = (await create(team, { url: 'http://127.0.0.1:9/slack', events: ['alert.opened'], format: 'slack' }, app).expect(201)).body;
    expect(slack).to.not.have.property('secret');
    const refused = await api(app).post(`/api/v1/webhooks/${slack.id}/rotate-secret`).set(...team.auth).expect(409);
    expect(errorOf(refused.body).code).to.equal('conflict');
  });

  it('refuses http, and hosts that resolve to loopback, private, link-local or metadata addresses, by default', async () => {
    const team = await newTeam();
    const strict = api(strictApp()); // WEBHOOK_ALLOW_HTTP and WEBHOOK_ALLOW_PRIVATE unset
    for (const [url, says] of [
      ['http://hooks.example.com/x', 'https'],
      ['https://127.0.0.1/x', '127.0.0.1'],
      ['https://localhost:8443/x', 'loopback'],
      ['https://169.254.169.254/latest/meta-data', '169.254.169.254'],
      ['https://10.1.2.3/x', '10.1.2.3'],
      ['https://[::1]/x', '::1'],
      ['https://[::ffff:192.168.1.1]/x', 'private'],
      ['ftp://example.com/x', 'https'],
      ['not a url', 'absolute'],
    ]) {
      const res = await strict.post('/api/v1/webhooks').set(...team.auth).send({ url, events: ['alert.opened'] }).expect(400);
      const error = errorOf(res.body);
      expect(error.details, url).to.deep.equal([{ field: 'url', message: (error.details as { message: string }[])[0]!.message }]);
      expect(error.message, url).to.include(says);
    }
    expect((await api().get('/api/v1/webhooks').set(...team.auth).expect(200)).body.data).to.deep.equal([]);
  });

  it('judges addresses, and a name by every address it resolves to', async () => {
    for (const ip of ['127.0.0.1', '10.0.0.1', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '224.0.0.1']) {
      expect(isPrivateAddress(ip), ip).to.equal(true);
    }
    for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isPrivateAddress(ip), ip).to.equal(false);
    const strict = { allowHttp: false, allowPrivate: false };
    // One private address among public ones is enough to refuse (DNS rebinding picks either).
    expect(await urlProblem('https://hooks.example.com/x', strict, async () => ['93.184.216.34', '10.0.0.7'])).to.include('10.0.0.7');
    expect(await urlProblem('https://hooks.example.com/x', strict, async () => ['93.184.216.34'])).to.equal(undefined);
    expect(await urlProblem('https://nowhere.invalid/x', strict, async () => Promise.reject(new Error('ENOTFOUND')))).to.include('does not resolve');
    expect(await urlProblem('https://hooks.example.com/x#frag', strict, async () => ['93.184.216.34'])).to.include('fragment');
    expect(await urlProblem('http://127.0.0.1:8080/x', { allowHttp: true, allowPrivate: true })).to.equal(undefined);
  });

  it(`a team has at most 20 endpoints; bad bodies are 400s naming the field; only admin keys may touch them`, async () => {
    const team = await newTeam();
    const app = localApp();
    for (let i = 0; i < 20; i++) await create(team, { url: `http://127.0.0.1:9/h${i}`, events: ['test'] }, app).expect(201);
    const over = await create(team, { url: 'http://127.0.0.1:9/h21', events: ['test'] }, app).expect(409);
    expect(errorOf(over.body).message).to.include('20');
    for (const [body, field] of [
      [{ url: 'http://127.0.0.1:9/x', events: [] }, 'events'],
      [{ url: 'http://127.0.0.1:9/x', events: ['alert.deleted'] }, 'events[0]'],
      [{ url: 'http://127.0.0.1:9/x', events: ['test'], format: 'xml' }, 'format'],
      [{ events: ['test'] }, 'url'],
    ] as const) {
      const res = await create((await newTeam()), body, app).expect(400);
      expect((errorOf(res.body).details as { field: string }[]).map((d) => d.field), JSON.stringify(body)).to.include(field);
    }
    const reader = await keyWith(team, { name: 'dash', scopes: ['read'] });
    await api(app).get('/api/v1/webhooks').set(...bearer(reader.apiKey)).expect(403);
  });
});
