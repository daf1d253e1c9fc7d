/** The webhook outbox survives a kill -9: what was pending is delivered after the restart. */
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { sleep } from '../helpers/common.js';
import { callWithKey, startService, tempDir } from '../helpers/processes.js';
import { Receiver } from './receiver.js';

const KEY = 'webhook-restart-key-0123456789abcdef';

const call = (baseUrl: string, method: string, path: string, body?: unknown) => callWithKey(baseUrl, KEY, method, path, body);

describe('webhook outbox across a kill -9', function () {
  this.timeout(90_000);

  it('deliveries pending when the service is killed are delivered after it starts again', async () => {
    const dataDir = tempDir('webhook-restart');
    const env = {
      DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: KEY,
      WEBHOOK_ALLOW_HTTP: '1',
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_RETRY_SCHEDULE: '500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms',
    };
    // A receiver's port, closed for now: attempts meet a refused connection.
    const receiver = await new Receiver().start();
    const port = receiver.port;
    await receiver.stop();

    const first = await startService(env);
    let secret: string;
    try {
      const hook = await call(first.baseUrl, 'POST', '/api/v1/webhooks', { url: `http://127.0.0.1:${port}/hook`, events: ['alert.opened'] });
      expect(hook.status).to.equal(201);
      secret = hook.body.secret;
      expect((await call(first.baseUrl, 'POST', '/api/v1/policies', { name: 'p', limits: [{ kind: 'per_call', amount: '1' }] })).status).to.equal(201);
      const ingest = await call(first.baseUrl, 'POST', '/api/v1/events', { events: [{ agent_id: 'a1', endpoint: 'https://x.example/p', method: 'GET', amount: '5' }] });
      expect(ingest.body.alerts_created).to.equal(1);
      // Wait for a failed attempt, so the delivery is pending with a retry scheduled.
      for (let i = 0; i < 100; i++) {
        const log = await call(first.baseUrl, 'GET', `/api/v1/webhooks/${hook.body.id}/deliveries`);
        if (log.body.data[0]?.attempts >= 1) break;
        await sleep(50);
      }
    } finally {
      first.child.kill('SIGKILL');
      await first.exited;
    }

    await receiver.start(port);
    const second = await startService(env);
    try {
      const [delivered] = await receiver.waitFor(1, 20_000);
      const event = new Webhook(secret!).verify(delivered!.body, {
        'webhook-id': String(delivered!.headers['webhook-id']),
        'webhook-timestamp': String(delivered!.headers['webhook-timestamp']),
        'webhook-signature': String(delivered!.headers['webhook-signature']),
      }) as { type: string };
      expect(event.type).to.equal('alert.opened');
      const hooks = await call(second.baseUrl, 'GET', '/api/v1/webhooks');
      // The outcome is written shortly after the answer (outcomes are written in batches).
      let log = await call(second.baseUrl, 'GET', `/api/v1/webhooks/${hooks.body.data[0].id}/deliveries`);
      for (let i = 0; i < 40 && log.body.data[0]?.status !== 'delivered'; i++) {
        await sleep(50);
        log = await call(second.baseUrl, 'GET', `/api/v1/webhooks/${hooks.body.data[0].id}/deliveries`);
      }
      expect(log.body.data).to.have.length(1);
      expect(log.body.data[0]).to.include({ status: 'delivered', lastStatusCode: 200 });
      expect(log.body.data[0].attempts).to.be.at.least(2);
    } finally {
      second.child.kill('SIGTERM');
      expect(await second.exited).to.equal(0);
      await receiver.stop();
    }
  });
});
