/**
 * The alerts store, the same tests on SQLite and on PostgreSQL: one open alert per breach whichever
 * instance records it, webhook events queued with the change, resolving and reopening.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import { AlertConflict, countOpenAlerts, findAlert, listAlerts, recordOccurrences, setAlertStatus, type Occurrence } from '../../src/alerts/repository.js';
import { SecretBox } from '../../src/stores/secrets.js';
import { perform, type Database } from '../../src/stores/sql.js';
import { createEndpoint } from '../../src/webhooks/repository.js';
import { forEachDialect } from '../helpers/dialects.js';

const occurrence = (over: Partial<Occurrence> = {}): Occurrence => ({
  teamId: 'team_a',
  dedupKey: 'daily:pol_1:bot-1:2026-11-24',
  type: 'violation',
  kind: 'daily',
  severity: 'warning',
  agentId: 'bot-1',
  policyId: 'pol_1',
  window: { start: 1_000, end: 2_000 },
  observed: '10.000000000000000001',
  limit: '10',
  subject: null,
  details: { n: 1 },
  message: 'over',
  count: 1,
  firstSeen: 1_500,
  lastSeen: 1_500,
  eventIds: ['e1'],
  ...over,
});

const record = (db: Database, occurrences: Occurrence[], now = 10_000) => db.transaction((sql) => perform(sql, recordOccurrences(occurrences, now)));

/** Queued deliveries, by event type. */
async function queued(db: Database): Promise<string[]> {
  return (await db.all<{ event_type: string }>('SELECT event_type FROM webhook_deliveries ORDER BY seq')).map((r) => r.event_type);
}

describe('alerts store, on SQLite and PostgreSQL', function () {
  this.timeout(120_000);
  forEachDialect('alerts', (open) => {
    const seed = async () => {
      const store = await open();
      await store.db.run('INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)', ['team_a', 'a', 1]);
      const box = new SecretBox({ bytes: crypto.randomBytes(32), source: 'test' });
      // Two endpoints: one takes openings and escalations, the other only resolutions.
      await createEndpoint(store.db, box, 'team_a', { url: 'https://hooks.example.com/a', description: null, events: ['alert.opened', 'alert.escalated'], format: 'standard', active: true });
      await createEndpoint(store.db, box, 'team_a', { url: 'https://hooks.example.com/b', description: null, events: ['alert.resolved'], format: 'standard', active: true });
      return store;
    };

    it('opens one alert per breach and updates it after; a higher severity escalates it; each queues its event for the endpoints that take it', async () => {
      const { db } = await seed();
      expect(await record(db, [occurrence(), occurrence({ dedupKey: 'other', agentId: 'bot-2' })])).to.deep.equal([true, true]);
      expect(await record(db, [occurrence({ count: 2, lastSeen: 1_800, observed: '12', eventIds: ['e2', 'e1'] })])).to.deep.equal([false]);
      const [alert, ...none] = await listAlerts(db, 'team_a', { agent: 'bot-1', status: 'open' }, { limit: 10 });
      expect(none).to.deep.equal([]);
      expect(alert).to.include({ count: 3, firstSeen: 1_500, lastSeen: 1_800, observed: '12', severity: 'warning' });
      expect(alert!.sampleEventIds).to.deep.equal(['e1', 'e2']);
      expect(await queued(db)).to.deep.equal(['alert.opened', 'alert.opened']);

      // An older occurrence counts, but does not replace the latest observed value.
      await record(db, [occurrence({ lastSeen: 1_200, firstSeen: 1_100, observed: '11', severity: 'critical' })]);
      expect(await findAlert(db, 'team_a', alert!.id)).to.include({ count: 4, firstSeen: 1_100, lastSeen: 1_800, observed: '12', severity: 'critical' });
      expect(await queued(db)).to.deep.equal(['alert.opened', 'alert.opened', 'alert.escalated']);
      expect(await countOpenAlerts(db, 'team_a')).to.equal(2);
    });

    it('an alert changed since this process wrote it (another writer, a rolled-back write) is read again before it is updated', async () => {
      const { db } = await seed();
      expect(await record(db, [occurrence()])).to.deep.equal([true]);
      // Another instance counts 5 more and a larger total: the next occurrence (a smaller total)
      // adds its count and leaves the larger total shown.
      await db.run("UPDATE alerts SET count = count + 5, observed = '20' WHERE team_id = 'team_a'");
      expect(await record(db, [occurrence({ observed: '15', lastSeen: 1_600, message: 'at 15' })])).to.deep.equal([false]);
      let [alert] = await listAlerts(db, 'team_a', { status: 'open' }, { limit: 10 });
      expect(alert).to.include({ count: 7, observed: '20', message: 'over' });
      // A write rolled back: the alert is as before it, and the next write builds on that.
      const failed = await db
        .transaction(async (sql) => {
          await perform(sql, recordOccurrences([occurrence({ observed: '30', count: 3, eventIds: ['e9'] })], 10_000));
          throw new Error('rolled back');
        })
        .catch((err: Error) => err.message);
      expect(failed).to.equal('rolled back');
      expect(await record(db, [occurrence({ observed: '25', lastSeen: 1_700, message: 'at 25', eventIds: ['e3'] })])).to.deep.equal([false]);
      [alert] = await listAlerts(db, 'team_a', { status: 'open' }, { limit: 10 });
      expect(alert).to.include({ count: 8, observed: '25', message: 'at 25', lastSeen: 1_700 });
      expect(alert!.sampleEventIds).to.deep.equal(['e1', 'e3']);
    });

    it('three instances recording one breach at once open one alert, counting every occurrence', async () => {
      const { db, another } = await seed();
      const instances = [db, another(), another()];
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all(instances.map((i, n) => record(i, [occurrence({ dedupKey: `race-${round}`, eventIds: [`e${n}`] })], 10_000 + round)));
        expect(results.flat().filter(Boolean), `round ${round}`).to.have.length(1);
        const alerts = await listAlerts(db, 'team_a', {}, { limit: 50 });
        expect(alerts.map((a) => a.count)).to.deep.equal(new Array(round + 1).fill(3));
        expect(alerts[0]!.sampleEventIds).to.have.members(['e0', 'e1', 'e2']);
      }
      expect(await countOpenAlerts(db, 'team_a')).to.equal(3);
      expect(await queued(db)).to.deep.equal(['alert.opened', 'alert.opened', 'alert.opened']);
    });

    it('instances updating the same open alerts in opposite orders at once never deadlock; two resolving one alert at once resolve it once', async () => {
      const { db, another } = await seed();
      await record(db, [occurrence({ dedupKey: 'x' }), occurrence({ dedupKey: 'y' })]);
      const instances = [db, another()];
      for (let round = 0; round < 10; round++) {
        const orders = [[occurrence({ dedupKey: 'x' }), occurrence({ dedupKey: 'y' })], [occurrence({ dedupKey: 'y' }), occurrence({ dedupKey: 'x' })]];
        await Promise.all(instances.map((i, n) => record(i, orders[n]!)));
      }
      expect((await listAlerts(db, 'team_a', {}, { limit: 10 })).map((a) => a.count)).to.deep.equal([21, 21]);

      const [alert] = await listAlerts(db, 'team_a', {}, { limit: 1 });
      const resolutions = await Promise.all(instances.map((i, n) => i.transaction((sql) => setAlertStatus(sql, 'team_a', alert!.id, 'resolved', `note ${n}`))));
      expect(resolutions.map((r) => r!.status)).to.deep.equal(['resolved', 'resolved']);
      expect(await queued(db)).to.deep.equal(['alert.opened', 'alert.opened', 'alert.resolved']);
    });

    it('resolves with a note and reopens; reopening while the breach has a newer open alert is a conflict', async () => {
      const { db } = await seed();
      await record(db, [occurrence()]);
      const [first] = await listAlerts(db, 'team_a', {}, { limit: 1 });
      const resolved = await db.transaction((sql) => setAlertStatus(sql, 'team_a', first!.id, 'resolved', 'fixed'));
      expect(resolved).to.include({ status: 'resolved', resolution: 'fixed' });
      expect(await listAlerts(db, 'team_a', { status: 'open' }, { limit: 10 })).to.deep.equal([]);
      const reopened = await db.transaction((sql) => setAlertStatus(sql, 'team_a', first!.id, 'open'));
      expect(reopened).to.include({ status: 'open', resolution: null, resolvedAt: null });

      await db.transaction((sql) => setAlertStatus(sql, 'team_a', first!.id, 'resolved'));
      expect(await record(db, [occurrence()])).to.deep.equal([true]);
      let error: unknown;
      await db.transaction((sql) => setAlertStatus(sql, 'team_a', first!.id, 'open')).catch((err) => (error = err));
      expect(error).to.be.instanceOf(AlertConflict);
      expect(await findAlert(db, 'team_a', first!.id)).to.include({ status: 'resolved' });
      expect(await queued(db)).to.deep.equal(['alert.opened', 'alert.resolved', 'alert.resolved', 'alert.opened']);
    });
  });
});
