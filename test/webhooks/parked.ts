import { perform, type Sql } from '../../src/stores/sql.js';
import { enqueueEvent } from '../../src/webhooks/outbox.js';
import { createEndpoint } from '../../src/webhooks/repository.js';
import { newTeam, testEnv } from '../helpers/context.js';

/** Queues a test event for one endpoint, as POST /webhooks/:id/test does; resolves to its delivery id. */
export async function queueTestEvent(sql: Sql, teamId: string, endpointId: string, message: string): Promise<string> {
  const [deliveryId] = await perform(
    sql,
    enqueueEvent(teamId, 'test', function* () {
      return { message };
    }, Date.now(), endpointId),
  );
  return deliveryId!;
}

/**
 * An inactive endpoint (the shared dispatcher leaves it alone) with one queued test delivery,
 * stored as it was when its URL passed the check at creation: a dispatcher of the test's own sends it.
 */
export async function parkedDelivery(url: string) {
  const team = await newTeam();
  const { db, secrets } = testEnv().deps;
  return db.transaction(async (sql) => {
    const hook = await createEndpoint(sql, secrets, team.teamId, { url, description: null, events: ['test'], format: 'standard', active: false });
    return { team, hook, deliveryId: await queueTestEvent(sql, team.teamId, hook.id, 'parked') };
  });
}
