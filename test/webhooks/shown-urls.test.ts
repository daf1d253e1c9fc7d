/**
 * Credentials in webhook URLs (a query token, user:password@, a slack path) are shown masked in
 * API answers, the audit log and alerts, and stored nowhere in clear; deliveries go to the real URL.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { api, describeOnEachRegistry, newTeam, testEnv } from '../helpers/context.js';
import { registryBytes } from '../helpers/registry-bytes.js';
import { Receiver } from './receiver.js';

/** Hex: the same in a URL, in JSON and on disk. */
const newSecret = () => crypto.randomBytes(12).toString('hex');

/** What the team's webhooks left in the registry outside the sealed endpoints: audit log, alerts, deliveries. */
async function storedRows(teamId: string): Promise<string> {
  const { db } = testEnv().deps;
  const rows = [
    await db.all('SELECT * FROM management_audit WHERE team_id = ?', [teamId]),
    await db.all('SELECT * FROM alerts WHERE team_id = ?', [teamId]),
    await db.all('SELECT * FROM webhook_deliveries WHERE team_id = ?', [teamId]),
  ];
  return JSON.stringify(rows);
}

function expectNowhere(text: string, secrets: readonly string[], where: string): void {
  for (const secret of secrets) expect(text.includes(secret), `${secret} found in ${where}`).to.equal(false);
}

/** The registry's rows, its log lines and (SQLite) its files on disk hold none of `secrets`. */
async function expectStoredNowhere(teamId: string, secrets: readonly string[]): Promise<void> {
  const env = testEnv();
  expectNowhere(await storedRows(teamId), secrets, 'the registry rows');
  expectNowhere(JSON.stringify(env.logLines), secrets, 'the log');
  if (env.dialect === 'sqlite') {
    env.registry.pragma('wal_checkpoint(TRUNCATE)');
    expectNowhere(registryBytes(env.registry).toString('latin1'), secrets, 'the registry files');
  }
}

describeOnEachRegistry('webhook URLs shown masked', function () {
  this.timeout(30_000);
  let receiver: Receiver;
  beforeEach(async () => (receiver = await new Receiver().start()));
  afterEach(() => receiver.stop());

  it('a query token, user:password@ and a slack path with a trailing slash are masked in answers and the audit log, stored nowhere in clear, and still used to deliver', async () => {
    const team = await newTeam();
    const [token, newToken, user, password, slackToken] = [newSecret(), newSecret(), newSecret(), newSecret(), newSecret()];
    const secrets = [token, newToken, user, password, slackToken];
    const url = `http://${user}:${password}@127.0.0.1:${receiver.port}/hook?token=${token}&v=2`;
    const shown = `http://***:***@127.0.0.1:${receiver.port}/hook?token=***&v=***`;

    const created = (await api().post('/api/v1/webhooks').set(...team.auth).send({ url, events: ['test'] }).expect(201)).body;
    expect(created.url).to.equal(shown);
    // A new token alone shows as the old one did; the audit log still records that the URL changed.
    const patched = (await api().patch(`/api/v1/webhooks/${created.id}`).set(...team.auth).send({ url: url.replace(token, newToken) }).expect(200)).body;
    expect(patched.url).to.equal(shown);
    const slack = (await api().post('/api/v1/webhooks').set(...team.auth).send({ url: `http://127.0.0.1:9/services/T0SPEND/B0SCOPE/${slackToken}/`, events: ['alert.opened'], format: 'slack' }).expect(201)).body;
    expect(slack.url).to.equal('http://127.0.0.1:9/***');

    const answers = [
      created,
      patched,
      slack,
      (await api().get('/api/v1/webhooks').set(...team.auth).expect(200)).body,
      (await api().get(`/api/v1/webhooks/${slack.id}`).set(...team.auth).expect(200)).body,
      (await api().post(`/api/v1/webhooks/${created.id}/test`).set(...team.auth).expect(200)).body,
    ];
    const log = (await api().get('/api/v1/audit-log?resource_type=webhook').set(...team.auth).expect(200)).body.data as { action: string; changes: { url?: unknown } }[];
    expect(log.map((c) => [c.action, c.changes.url])).to.deep.equal([
      ['webhook.create', { before: null, after: 'http://127.0.0.1:9/***' }],
      ['webhook.update', { before: shown, after: shown }],
      ['webhook.create', { before: null, after: shown }],
    ]);
    expectNowhere(JSON.stringify([answers, log]), secrets, 'an API answer');
    await expectStoredNowhere(team.teamId, secrets);

    // Sent to the URL as given: its query, and its user and password as Basic credentials.
    expect(answers[5].delivered).to.equal(true);
    expect(receiver.received.map((r) => [r.url, r.headers.authorization])).to.deep.equal([
      [`/hook?token=${newToken}&v=2`, `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`],
    ]);
  });

  it('the alert of an endpoint disabled after failing, and the events that carry it, name its URL masked', async () => {
    const team = await newTeam();
    const [token, user, password] = [newSecret(), newSecret(), newSecret()];
    const shown = `http://***:***@127.0.0.1:${receiver.port}/failing?token=***`;
    const failing = (await api().post('/api/v1/webhooks').set(...team.auth).send({ url: `http://${user}:${password}@127.0.0.1:${receiver.port}/failing?token=${token}`, events: ['test'] }).expect(201)).body;
    await api().post('/api/v1/webhooks').set(...team.auth).send({ url: receiver.url('/watching'), events: ['alert.opened'] }).expect(201);
    // It has been failing since 25 hours ago; this attempt fails too, and it is disabled.
    await testEnv().deps.db.run('UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?', [Date.now() - 25 * 3_600_000, failing.id]);
    receiver.answers = [500];
    expect((await api().post(`/api/v1/webhooks/${failing.id}/test`).set(...team.auth).expect(200)).body.delivered).to.equal(false);

    const [alert] = (await api().get('/api/v1/alerts?type=system').set(...team.auth).expect(200)).body.data;
    expect(alert).to.include({ kind: 'webhook_disabled', subject: failing.id });
    expect(alert.details.url).to.equal(shown);
    expect(alert.message).to.include(`(${shown})`);
    // The other endpoint is sent the alert as it is stored.
    await receiver.waitFor(2);
    const sent = receiver.events<{ type: string; data: { kind: string; details: { url: string }; message: string } }>().find((e) => e.type === 'alert.opened');
    expect(sent!.data.details.url).to.equal(shown);
    expect(sent!.data.message).to.equal(alert.message);

    const secrets = [token, user, password];
    expectNowhere(JSON.stringify([alert, receiver.received.map((r) => r.body)]), secrets, 'the alert');
    await expectStoredNowhere(team.teamId, secrets);
  });
});
