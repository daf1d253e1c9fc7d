/** Webhook deliveries to real local receivers: signed, retried, logged, once per event. */
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { newPolicy, sleep, type Team } from '../helpers/common.js';
import { api, newTeam, describeOnEachRegistry } from '../helpers/context.js';
import { Receiver } from './receiver.js';
const ALL = ['alert.opened', 'alert.escalated', 'alert.resolved', 'alert.reopened'];

async function endpoint(team: Team, body: object): Promise<{ id: string; secret?: string }> {
  return (await api().post('/api/v1/webhooks').set(...team.auth).send(body).expect(201)).body;
}

/** A daily policy over agent a1, flag or block. */
async function policy(team: Team, action: 'flag' | 'block', amount = '1'): Promise<string> {
  return (await newPolicy(team, { name: 'tight', agents: ['a1'], limits: [{ kind: 'daily', amount }], action })).id;
}

let n = 0;
async function spend(team: Team, amount: string): Promise<void> {
  const record = { id: `wh-${process.pid}-${++n}`, agent_id: 'a1', endpoint: 'https://api.example.com/x', method: 'GET', amount, asset: 'USDC' };
  await api().post('/api/v1/events').set(...team.auth).send({ events: [record] }).expect(200);
}

/** The headers standardwebhooks reads, as a receiver passes them. */
const signed = (r: { headers: Record<string, unknown> }) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});

describeOnEachRegistry('webhook deliveries', function () {
  this.timeout(60_000);
  let receiver: Receiver;
  beforeEach(async () => (receiver = await new Receiver().start()));
  afterEach(() => receiver.stop());

  it('an opened alert is delivered signed (verified with standardwebhooks), once; escalation, resolve and reopen send their events', async () => {
    const team = await newTeam();
    const hook = await endpoint(team, { url: receiver.url(), events: ALL });
    const policyId = await policy(team, 'flag');
    await spend(team, '2');
    const [first] = await receiver.waitFor(1);
    const verified = new Webhook(hook.secret!).verify(first!.body, signed(first!)) as { type: string; id: string; data: { id: string } };
    expect(verified.type).to.equal('alert.opened');
    expect(first!.headers['webhook-id']).to.equal(verified.id).and.match(/^evt_/);
    const alert = (await api().get(`/api/v1/alerts/${verified.data.id}`).set(...team.auth).expect(200)).body;
    // data is the alert as GET /alerts/:id returned it when the event was made.
    expect(verified.data).to.deep.include({ id: alert.id, type: 'violation', kind: 'daily', severity: 'warning', policyId, limit: '1' });
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(first!.body, signed(first!))).to.throw();

    // More occurrences of the open alert update it and send nothing.
    await spend(team, '1');
    await spend(team, '1');
    await sleep(600);
    expect(receiver.received).to.have.length(1);

    // Its severity rises (the policy now blocks): escalated, once.
    await api().patch(`/api/v1/policies/${policyId}`).set(...team.auth).send({ action: 'block' }).expect(200);
    await spend(team, '1');
    await spend(team, '1');
    await receiver.waitFor(2);
    await sleep(600);
    expect(receiver.events().map((e) => e.type)).to.deep.equal(['alert.opened', 'alert.escalated']);
    expect(receiver.events()[1]!.data).to.include({ id: alert.id, severity: 'critical' });

    await api().patch(`/api/v1/alerts/${alert.id}`).set(...team.auth).send({ note: 'raised the budget' }).expect(200);
    await api().patch(`/api/v1/alerts/${alert.id}`).set(...team.auth).send({ status: 'open' }).expect(200);
    await receiver.waitFor(4);
    const events = receiver.events();
    expect(events.map((e) => e.type)).to.deep.equal(['alert.opened', 'alert.escalated', 'alert.resolved', 'alert.reopened']);
    expect(events[2]!.data).to.include({ status: 'resolved', resolution: 'raised the budget' });
    expect(new Set(events.map((e) => e.id)).size).to.equal(4);
    for (const r of receiver.received) expect(() => new Webhook(hook.secret!).verify(r.body, signed(r))).to.not.throw();
  });

  it('a receiver that answers 500 twice gets it on the third attempt; the delivery log shows the attempts', async () => {
    const team = await newTeam();
    receiver.answers = [500, 500];
    const hook = await endpoint(team, { url: receiver.url(), events: ['alert.opened'] });
    await policy(team, 'block');
    await spend(team, '5');
    await receiver.waitFor(3);
    const [a, b, c] = receiver.received;
    // The same event each time (receivers drop copies by its id), about 200 ms apart (WEBHOOK_RETRY_SCHEDULE).
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).to.equal(1);
    expect(b!.at - a!.at).to.be.within(150, 2_000);
    expect(c!.at - b!.at).to.be.within(150, 2_000);
    await sleep(200);
    const log = (await api().get(`/api/v1/webhooks/${hook.id}/deliveries`).set(...team.auth).expect(200)).body.data;
    expect(log).to.have.length(1);
    expect(log[0]).to.include({ eventType: 'alert.opened', status: 'delivered', attempts: 3, lastStatusCode: 200, lastError: null, nextAttemptAt: null });
    expect(log[0].deliveredAt).to.be.a('string');
    const pending = (await api().get(`/api/v1/webhooks/${hook.id}/deliveries?status=pending`).set(...team.auth).expect(200)).body.data;
    expect(pending).to.deep.equal([]);
  });

  it('after the last attempt a delivery is failed, with the answer kept; retry sends it again now', async () => {
    const team = await newTeam();
    receiver.answers = [503, 503, 503, 503];
    const hook = await endpoint(team, { url: receiver.url(), events: ['alert.opened'] });
    await policy(team, 'flag');
    await spend(team, '3');
    await receiver.waitFor(4); // the first attempt and the three of the schedule
    await sleep(300);
    const [failed] = (await api().get(`/api/v1/webhooks/${hook.id}/deliveries?status=failed`).set(...team.auth).expect(200)).body.data;
    expect(failed).to.include({ status: 'failed', attempts: 4, lastStatusCode: 503, lastError: 'answered 503', responseBody: 'failing on purpose with 503', nextAttemptAt: null });
    const retried = await api().post(`/api/v1/webhooks/${hook.id}/deliveries/${failed.id}/retry`).set(...team.auth).expect(200);
    expect(retried.body).to.deep.include({ delivered: true, statusCode: 200, error: null });
    expect(retried.body.delivery).to.include({ status: 'delivered', attempts: 5 });
    await api().post(`/api/v1/webhooks/${hook.id}/deliveries/${failed.id}/retry`).set(...team.auth).expect(409);
  });

  it('a redirect is not followed (it counts as a failed attempt), and a long answer is kept to 1 KiB', async () => {
    const team = await newTeam();
    const elsewhere = await new Receiver().start();
    try {
      receiver.answers = [302, 500];
      receiver.headers = { Location: elsewhere.url() };
      receiver.bodyOf = (status) => (status === 500 ? 'x'.repeat(5_000) : 'ok');
      const hook = await endpoint(team, { url: receiver.url(), events: ['test'] });
      const redirected = await api().post(`/api/v1/webhooks/${hook.id}/test`).set(...team.auth).expect(200);
      expect(redirected.body).to.include({ delivered: false, statusCode: 302, error: 'answered 302' });
      const long = await api().post(`/api/v1/webhooks/${hook.id}/test`).set(...team.auth).expect(200);
      expect(long.body).to.include({ delivered: false, statusCode: 500 });
      expect(long.body.delivery.responseBody).to.equal('x'.repeat(1024));
      expect(elsewhere.received).to.have.length(0);
    } finally {
      await elsewhere.stop();
    }
  });

  it('after a secret rotation each delivery is signed with both secrets for 24 hours', async () => {
    const team = await newTeam();
    const hook = await endpoint(team, { url: receiver.url(), events: ['test'] });
    const rotated = (await api().post(`/api/v1/webhooks/${hook.id}/rotate-secret`).set(...team.auth).expect(200)).body;
    const test = await api().post(`/api/v1/webhooks/${hook.id}/test`).set(...team.auth).expect(200);
    expect(test.body).to.deep.include({ delivered: true, statusCode: 200 });
    const [r] = receiver.received;
    expect(String(r!.headers['webhook-signature']).split(' ')).to.have.length(2);
    expect(() => new Webhook(hook.secret!).verify(r!.body, signed(r!))).to.not.throw();
    expect(() => new Webhook(rotated.secret).verify(r!.body, signed(r!))).to.not.throw();
    expect(JSON.parse(r!.body)).to.include({ type: 'test' });
  });

  it('a slack endpoint gets a Slack incoming-webhook message: text and blocks, the amounts exact, a link to the alert', async () => {
    const team = await newTeam();
    await endpoint(team, { url: receiver.url('/services/T000/B000/XXXX'), events: ['alert.opened'], format: 'slack' });
    await policy(team, 'block', '0.1');
    await spend(team, '0.300000000000000001');
    const [r] = await receiver.waitFor(1);
    expect(r!.headers).to.not.have.property('webhook-signature');
    const message = JSON.parse(r!.body) as { text: string; blocks: { type: string; text?: { type: string; text: string }; elements?: { type: string; text: string }[] }[] };
    // Slack's incoming-webhook payload: `text` (the notification) and `blocks` of known block types.
    expect(Object.keys(message).sort()).to.deep.equal(['blocks', 'text']);
    expect(message.blocks.map((b) => b.type)).to.deep.equal(['section', 'context']);
    expect(message.blocks[0]!.text!.type).to.equal('mrkdwn');
    expect(message.text).to.include('Agent *a1*').and.include('daily limit').and.include('spent 0.300000000000000001 against a limit of 0.1 (0.200000000000000001 over)');
    const alertId = (await api().get('/api/v1/alerts').set(...team.auth).expect(200)).body.data[0].id;
    expect(message.blocks[1]!.elements![0]!.text).to.include(`<http://spendscope.test/api/v1/alerts/${alertId}|${alertId}>`);
  });

  it('an inactive endpoint, or one not taking the type, is sent nothing; test needs an active endpoint', async () => {
    const team = await newTeam();
    const off = await endpoint(team, { url: receiver.url('/off'), events: ALL, active: false });
    await endpoint(team, { url: receiver.url('/resolved-only'), events: ['alert.resolved'] });
    await policy(team, 'flag');
    await spend(team, '2');
    await sleep(600);
    expect(receiver.received).to.have.length(0);
    await api().post(`/api/v1/webhooks/${off.id}/test`).set(...team.auth).expect(409);
  });
});
