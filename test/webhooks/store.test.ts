/**
 * The webhook endpoints store and the outbox, the same tests on SQLite and on PostgreSQL:
 * endpoints sealed at rest, the cap per team held across instances, events queued for the endpoints
 * that take them, the delivery log.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import { SecretBox } from '../../src/stores/secrets.js';
import { perform } from '../../src/stores/sql.js';
import { DELIVERIES_QUEUED, enqueueEvent } from '../../src/webhooks/outbox.js';
import {
  createEndpoint,
  deleteEndpoint,
  findDelivery,
  findEndpoint,
  listDeliveries,
  listEndpoints,
  MAX_ENDPOINTS_PER_TEAM,
  resealEndpointSecrets,
  rotateSecret,
  TooManyEndpoints,
  updateEndpoint,
  type EndpointInput,
} from '../../src/webhooks/repository.js';
import { forEachDialect } from '../helpers/dialects.js';

const box = new SecretBox({ bytes: crypto.randomBytes(32), source: 'test' });
const input = (url: string, over: Partial<EndpointInput> = {}): EndpointInput => ({ url, description: null, events: ['alert.opened'], format: 'standard', active: true, ...over });

describe('webhook store, on SQLite and PostgreSQL', function () {
  this.timeout(120_000);
  forEachDialect('webhooks', (open) => {
    const seed = async () => {
      const store = await open();
      await store.db.run('INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?), (?, ?, ?)', ['team_a', 'a', 1, 'team_b', 'b', 1]);
      return store;
    };

    it('creates an endpoint sealed at rest, finds, lists, changes, rotates its secret and deletes it', async () => {
      const { db } = await seed();
      const hook = await db.transaction((sql) => createEndpoint(sql, box, 'team_a', input('https://hooks.example.com/a'), 1_000));
      expect(hook).to.include({ url: 'https://hooks.example.com/a', format: 'standard', active: true, disabledAt: null });
      expect(hook.secret).to.match(/^whsec_/);
      const stored = (await db.get<{ url: string; secret: string }>('SELECT url, secret FROM webhook_endpoints WHERE id = ?', [hook.id]))!;
      expect(stored.url).to.not.include('hooks.example.com');
      expect(stored.secret).to.not.include(hook.secret!.slice(6));
      expect(await findEndpoint(db, box, 'team_a', hook.id)).to.deep.equal(hook);
      expect(await findEndpoint(db, box, 'team_b', hook.id)).to.equal(undefined);

      await db.run('UPDATE webhook_endpoints SET disabled_at = 5, disabled_reason = ? WHERE id = ?', ['failing', hook.id]);
      const changed = await updateEndpoint(db, box, 'team_a', hook.id, { description: 'ops', events: ['alert.opened', 'alert.resolved'], active: true }, 2_000);
      expect(changed).to.include({ url: hook.url, description: 'ops', disabledAt: null, disabledReason: null, updatedAt: 2_000 });
      expect(changed!.events).to.deep.equal(['alert.opened', 'alert.resolved']);

      const rotated = (await rotateSecret(db, box, 'team_a', hook.id, 3_000))!;
      expect(rotated.secret).to.not.equal(hook.secret);
      expect(rotated).to.include({ previousSecret: hook.secret, previousSecretUntil: 3_000 + 24 * 3_600_000 });
      const slack = await db.transaction((sql) => createEndpoint(sql, box, 'team_a', input('https://hooks.slack.com/services/T/B/x', { format: 'slack' }), 4_000));
      expect(await rotateSecret(db, box, 'team_a', slack.id)).to.equal(null);
      expect((await listEndpoints(db, box, 'team_a')).map((e) => e.id)).to.deep.equal([hook.id, slack.id]);

      expect(await deleteEndpoint(db, 'team_b', hook.id)).to.equal(false);
      expect(await deleteEndpoint(db, 'team_a', hook.id)).to.equal(true);
      expect((await listEndpoints(db, box, 'team_a')).map((e) => e.id)).to.deep.equal([slack.id]);
    });

    it("two rotations of one secret at once: the second keeps the first's new secret as its previous one, so both answers sign", async () => {
      const { db, another } = await seed();
      const hook = await db.transaction((sql) => createEndpoint(sql, box, 'team_a', input('https://hooks.example.com/rotate')));
      const instances = [db, another()];
      await Promise.all(instances.map((i) => i.get('SELECT 1'))); // connected, so both start together
      for (let round = 0; round < 10; round++) {
        const rotated = await Promise.all(instances.map((i) => i.transaction((sql) => rotateSecret(sql, box, 'team_a', hook.id, 5_000))));
        const secrets = rotated.map((r) => r!.secret);
        const final = (await findEndpoint(db, box, 'team_a', hook.id))!;
        expect(secrets, `round ${round}`).to.include(final.secret);
        expect(final.previousSecret, `round ${round}`).to.equal(secrets.find((s) => s !== final.secret));
      }
    });

    it(`holds the cap of ${MAX_ENDPOINTS_PER_TEAM} endpoints per team when instances create at once`, async () => {
      const { db, another } = await seed();
      for (let i = 0; i < MAX_ENDPOINTS_PER_TEAM - 2; i++) await db.transaction((sql) => createEndpoint(sql, box, 'team_a', input(`https://hooks.example.com/${i}`)));
      const instances = [db, another(), another(), another()];
      const outcomes = await Promise.allSettled(instances.map((i, n) => i.transaction((sql) => createEndpoint(sql, box, 'team_a', input(`https://hooks.example.com/race-${n}`)))));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(2);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).to.be.instanceOf(TooManyEndpoints);
      expect(await listEndpoints(db, box, 'team_a')).to.have.length(MAX_ENDPOINTS_PER_TEAM);
    });

    it('queues an event for each active endpoint that takes its type, wakes the dispatcher after the commit (never for a rollback), and lists the deliveries newest first', async () => {
      const { db } = await seed();
      const takes = await db.transaction((sql) => createEndpoint(sql, box, 'team_a', input('https://hooks.example.com/takes', { events: ['alert.resolved', 'alert.opened'] })));
      const other = await db.transaction((sql) => createEndpoint(sql, box, 'team_a', input('https://hooks.example.com/other', { events: ['alert.resolved'] })));
      await db.transaction((sql) => createEndpoint(sql, box, 'team_a', input('https://hooks.example.com/off', { active: false })));
      await db.transaction((sql) => createEndpoint(sql, box, 'team_b', input('https://hooks.example.com/b')));
      let woken = 0;
      const stopListening = db.signals.on(DELIVERIES_QUEUED, () => woken++);
      try {
        const opened = function* () {
          return { alert: 'alr_1' };
        };
        const ids = await db.transaction(async (sql) => {
          const queued = await perform(sql, enqueueEvent('team_a', 'alert.opened', opened, 5_000));
          expect(woken).to.equal(0);
          return queued;
        });
        expect(ids).to.have.length(1);
        await new Promise((resolve) => setImmediate(resolve));
        expect(woken).to.equal(1);
        await db
          .transaction(async (sql) => {
            await perform(sql, enqueueEvent('team_a', 'alert.resolved', opened, 6_000));
            throw new Error('rolled back');
          })
          .catch(() => undefined);
        await new Promise((resolve) => setImmediate(resolve));
        expect(woken).to.equal(1);
        const [second] = await db.transaction((sql) => perform(sql, enqueueEvent('team_a', 'alert.resolved', opened, 7_000)));
        const [third] = await db.transaction((sql) => perform(sql, enqueueEvent('team_a', 'alert.resolved', opened, 8_000, takes.id)));
        expect(await perform(db, enqueueEvent('team_a', 'alert.escalated', opened))).to.deep.equal([]);

        const forTakes = await listDeliveries(db, 'team_a', takes.id, { limit: 10 });
        expect(forTakes.map((d) => d.eventType)).to.deep.equal(['alert.resolved', 'alert.resolved', 'alert.opened']);
        expect(forTakes[0]!.id).to.equal(third);
        const page = await listDeliveries(db, 'team_a', takes.id, { limit: 10, beforeSeq: forTakes[1]!.seq, status: 'pending' });
        expect(page.map((d) => d.id)).to.deep.equal([ids[0]]);
        const [toOther, ...none] = await listDeliveries(db, 'team_a', other.id, { limit: 10 });
        expect(none).to.deep.equal([]);
        expect(second).to.be.oneOf([toOther!.id, forTakes[1]!.id]);
        const delivery = (await findDelivery(db, 'team_a', other.id, toOther!.id))!;
        expect(delivery).to.include({ status: 'pending', attempts: 0, nextAttemptAt: 7_000, createdAt: 7_000, eventType: 'alert.resolved' });
        expect(delivery.eventId).to.equal(forTakes[1]!.eventId); // one event, the same id for every endpoint
        expect(await findDelivery(db, 'team_b', other.id, toOther!.id)).to.equal(undefined);
        const payload = JSON.parse((await db.get<{ payload: string }>('SELECT payload FROM webhook_deliveries WHERE id = ?', [toOther!.id]))!.payload);
        expect(payload).to.include({ type: 'alert.resolved', timestamp: new Date(7_000).toISOString() });
        expect(payload.data).to.deep.equal({ alert: 'alr_1' });
      } finally {
        stopListening();
      }
    });

    it('start-up seals values stored in clear, and a second start has nothing to do', async () => {
      const { db } = await seed();
      await db.run(
        `INSERT INTO webhook_endpoints (id, team_id, url, description, events, format, active, secret, created_at, updated_at)
         VALUES ('whk_clear', 'team_a', 'https://hooks.example.com/clear', NULL, '["test"]', 'standard', 1, 'whsec_aGVsbG8=', 1, 1)`,
      );
      expect(await resealEndpointSecrets(db, box)).to.equal(2);
      expect(await resealEndpointSecrets(db, box)).to.equal(0);
      expect(await findEndpoint(db, box, 'team_a', 'whk_clear')).to.include({ url: 'https://hooks.example.com/clear', secret: 'whsec_aGVsbG8=' });
    });
  });
});
