/** Webhooks that must not be sent, or must stop: private addresses at delivery time, endpoints failing for 24 hours. */
import { expect } from 'chai';
import { Dispatcher } from '../../src/webhooks/dispatcher.js';
import { sleep } from '../helpers/common.js';
import { api, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { parkedDelivery } from './parked.js';
import { Receiver } from './receiver.js';

describeOnEachRegistry('webhook safety', function () {
  this.timeout(30_000);
  let receiver: Receiver;
  beforeEach(async () => (receiver = await new Receiver().start()));
  afterEach(() => receiver.stop());

  it('a URL that resolves to a private address is refused at delivery time too (DNS can change after creation)', async () => {
    const { env } = { env: testEnv() };
    const strict = { ...env.config.webhooks, allowPrivate: false };
    // The name resolved to a public address when it was checked; it now resolves to this machine.
    const { hook, deliveryId } = await parkedDelivery(`http://hooks.example.com:${receiver.port}/hook`);
    let lookups = 0;
    const rebinding = new Dispatcher(env.deps.db, env.deps.secrets, strict, env.deps.logger, {
      publicUrl: 'http://spendscope.test',
      thread: 'main',
      resolver: async () => (++lookups === 1 ? ['93.184.216.34'] : ['127.0.0.1']),
    });
    const outcome = await rebinding.attemptNow(deliveryId);
    await rebinding.close();
    expect(outcome).to.include({ delivered: false, statusCode: null });
    expect(outcome!.error).to.include('no public address');
    expect(lookups).to.equal(2); // checked, then checked again as the connection was made
    expect(receiver.received).to.have.length(0);

    const direct = new Dispatcher(env.deps.db, env.deps.secrets, strict, env.deps.logger, { publicUrl: 'http://spendscope.test' });
    const { deliveryId: second } = await parkedDelivery(receiver.url());
    const refused = await direct.attemptNow(second);
    await direct.close();
    expect(refused!.error).to.include('127.0.0.1').and.include('WEBHOOK_ALLOW_PRIVATE');
    expect(receiver.received).to.have.length(0);
    const stored = await env.deps.db.get<{ status: string; attempts: number; last_error: string }>('SELECT status, attempts, last_error FROM webhook_deliveries WHERE id = ?', [deliveryId]);
    expect(stored).to.include({ status: 'pending', attempts: 1 });
    expect(hook.url).to.include('hooks.example.com');
  });

  it('a delivery asked for twice at once is sent once, and both callers get its outcome', async () => {
    const env = testEnv();
    const { deliveryId } = await parkedDelivery(receiver.url());
    // A dispatcher of its own, not started: it sends only what it is asked for, on a worker thread.
    const dispatcher = new Dispatcher(env.deps.db, env.deps.secrets, env.config.webhooks, env.deps.logger, { publicUrl: 'http://spendscope.test' });
    const [first, second] = await Promise.all([dispatcher.attemptNow(deliveryId), dispatcher.attemptNow(deliveryId)]);
    const unknown = await dispatcher.attemptNow('dlv_nosuchdelivery');
    await dispatcher.close();
    expect(receiver.received).to.have.length(1);
    expect(first).to.include({ deliveryId, delivered: true, statusCode: 200 });
    expect(second).to.deep.equal(first);
    expect(unknown).to.equal(undefined);
    const stored = await env.deps.db.get('SELECT status, attempts FROM webhook_deliveries WHERE id = ?', [deliveryId]);
    expect(stored).to.deep.equal({ status: 'delivered', attempts: 1 });
  });

  it('an endpoint that has failed every attempt for 24 hours is disabled, and the team gets a system alert', async () => {
    const team = await newTeam();
    const hook = (await api().post('/api/v1/webhooks').set(...team.auth).send({ url: receiver.url(), events: ['test', 'alert.opened'] }).expect(201)).body;
    // It has been failing since 25 hours ago; this attempt fails too.
    await testEnv().deps.db.run('UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?', [Date.now() - 25 * 3_600_000, hook.id]);
    receiver.answers = [500];
    const test = await api().post(`/api/v1/webhooks/${hook.id}/test`).set(...team.auth).expect(200);
    expect(test.body).to.include({ delivered: false, statusCode: 500 });
    const disabled = (await api().get(`/api/v1/webhooks/${hook.id}`).set(...team.auth).expect(200)).body;
    expect(disabled.disabledAt).to.be.a('string');
    expect(disabled.disabledReason).to.equal('every attempt failed for 24 hours');
    const alerts = (await api().get('/api/v1/alerts?type=system').set(...team.auth).expect(200)).body.data;
    expect(alerts).to.have.length(1);
    expect(alerts[0]).to.include({ type: 'system', kind: 'webhook_disabled', subject: hook.id, status: 'open', agentId: '' });
    expect(alerts[0].message).to.include(hook.id);
    // Disabled: nothing more is sent to it (its own system alert included) until it is re-enabled.
    await sleep(500);
    expect(receiver.received).to.have.length(1);
    await api().post(`/api/v1/webhooks/${hook.id}/test`).set(...team.auth).expect(409);
    const enabled = await api().patch(`/api/v1/webhooks/${hook.id}`).set(...team.auth).send({ active: true }).expect(200);
    expect(enabled.body).to.include({ disabledAt: null, active: true });
    const again = await api().post(`/api/v1/webhooks/${hook.id}/test`).set(...team.auth).expect(200);
    expect(again.body.delivered).to.equal(true);
    // Re-enabled, it gets the new test event; the first one, still pending a retry, may arrive too
    // (re-enabling resumes pending deliveries), so count what arrived by event id.
    const ids = receiver.received.map((r) => String(r.headers['webhook-id']));
    expect(ids).to.include(again.body.delivery.eventId);
    expect(ids.filter((id) => id === again.body.delivery.eventId)).to.have.length(1);
    expect(ids.length).to.be.within(2, 3);
  });

  it('a success clears the failing streak: one bad hour does not count towards 24', async () => {
    const team = await newTeam();
    const hook = (await api().post('/api/v1/webhooks').set(...team.auth).send({ url: receiver.url(), events: ['test'] }).expect(201)).body;
    receiver.answers = [500];
    await api().post(`/api/v1/webhooks/${hook.id}/test`).set(...team.auth).expect(200);
    const failingSince = async () =>
      (await testEnv().deps.db.get<{ failing_since: number | string | null }>('SELECT failing_since FROM webhook_endpoints WHERE id = ?', [hook.id]))!.failing_since;
    expect(Number(await failingSince())).to.be.closeTo(Date.now(), 60_000);
    await api().post(`/api/v1/webhooks/${hook.id}/test`).set(...team.auth).expect(200);
    expect(await failingSince()).to.equal(null);
  });
});
