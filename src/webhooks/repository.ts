import crypto from 'node:crypto';
import { SecretsKeyError, type SecretBox } from '../stores/secrets.js';
import { get, numberedPlaceholders, perform, type Database, type Sql, type Steps } from '../stores/sql.js';
import { lockTeam } from '../teams/repository.js';
import type { Registry } from '../stores/sqlite.js';
import { newId } from '../domain/ids.js';
import { EVENT_TYPES, type EventType } from '../domain/webhook-events.js';

export { EVENT_TYPES, type EventType };

export type WebhookFormat = 'standard' | 'slack';

/** A team has at most this many endpoints: each event is one delivery per endpoint. */
export const MAX_ENDPOINTS_PER_TEAM = 20;

/** After a rotation the old secret signs too for this long, so receivers can switch over. */
export const PREVIOUS_SECRET_MS = 24 * 3_600_000;

export interface WebhookEndpoint {
  id: string;
  teamId: string;
  url: string;
  description: string | null;
  events: EventType[];
  format: WebhookFormat;
  active: boolean;
  secret: string | null;
  previousSecret: string | null;
  previousSecretUntil: number | null;
  disabledAt: number | null;
  disabledReason: string | null;
  createdAt: number;
  updatedAt: number;
}

interface EndpointRow {
  id: string;
  team_id: string;
  url: string;
  description: string | null;
  events: string;
  format: WebhookFormat;
  active: number;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: number | null;
  disabled_at: number | null;
  disabled_reason: string | null;
  created_at: number;
  updated_at: number;
}

/**
 * The columns sealed at rest (src/stores/secrets.ts): the signing secrets, and the URL, which may
 * hold credentials (a user and password, a query token; a slack endpoint's path is Slack's token).
 * Each is sealed for its row and column, so a value copied to another endpoint does not open.
 * Elsewhere a URL is stored and shown masked (src/domain/shown-url.ts).
 */
const SEALED_COLUMNS = ['url', 'secret', 'previous_secret'] as const;
type SealedColumn = (typeof SEALED_COLUMNS)[number];
const sealContext = (endpointId: string, column: SealedColumn) => `webhook_endpoints/${endpointId}/${column}`;

const toEndpoint = (box: SecretBox, r: EndpointRow): WebhookEndpoint => {
  const open = (column: SealedColumn) => (r[column] === null ? null : box.open(r[column]!, sealContext(r.id, column)));
  return {
    id: r.id,
    teamId: r.team_id,
    url: open('url')!,
    description: r.description,
    events: JSON.parse(r.events) as EventType[],
    format: r.format,
    active: r.active === 1,
    secret: open('secret'),
    previousSecret: open('previous_secret'),
    previousSecretUntil: r.previous_secret_until,
    disabledAt: r.disabled_at,
    disabledReason: r.disabled_reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
};

/**
 * Start-up, before anything reads an endpoint: seals under the current key every value stored in
 * clear (before encryption at rest) or sealed under SECRETS_KEY_PREVIOUS, in one transaction, so
 * after one start the previous key can be dropped. A value sealed under a key not given stops the
 * start (SecretsKeyError): sending unsigned or with a garbage key would be worse. Returns how many
 * values were sealed anew.
 */
export async function resealEndpointSecrets(db: Database, box: SecretBox): Promise<number> {
  // On SQLite, clear values overwritten here must not stay readable in freed space of the file's
  // pages (a Database on SQLite reaches its connection as its origin). PostgreSQL's old row
  // versions are reclaimed by its vacuum.
  const registry = db.dialect === 'sqlite' ? (db.origin as Registry) : undefined;
  let clear = 0;
  registry?.pragma('secure_delete = ON');
  try {
    // Read and written in one transaction, the rows locked on PostgreSQL: an instance starting
    // during another's rotation of a secret never writes back the value it read before.
    return await db.transaction(async (sql) => {
      const rows = await sql.all<Pick<EndpointRow, 'id' | SealedColumn>>({
        sqlite: 'SELECT id, url, secret, previous_secret FROM webhook_endpoints',
        postgres: 'SELECT id, url, secret, previous_secret FROM webhook_endpoints ORDER BY id FOR UPDATE',
      });
      const updates: { id: string; column: SealedColumn; value: string }[] = [];
      for (const row of rows) {
        for (const column of SEALED_COLUMNS) {
          const stored = row[column];
          if (stored === null) continue;
          const context = sealContext(row.id, column);
          const under = box.sealedUnder(stored);
          if (under === 'current') continue;
          if (under === 'unknown') {
            throw new SecretsKeyError(
              `SECRETS_KEY: webhook endpoint ${row.id} holds values encrypted under another key than those given (${box.keysGiven()}). ` +
                'Start with the key they were encrypted with; to rotate, give the old one as SECRETS_KEY_PREVIOUS (or SECRETS_KEY_PREVIOUS_FILE) for one start.',
            );
          }
          if (under === 'clear') clear++;
          updates.push({ id: row.id, column, value: box.seal(under === 'clear' ? stored : box.open(stored, context), context) });
        }
      }
      for (const u of updates) await sql.run(`UPDATE webhook_endpoints SET ${u.column} = ? WHERE id = ?`, [u.value, u.id]);
      return updates.length;
    });
  } finally {
    registry?.pragma('secure_delete = OFF');
    // ...nor in the WAL's older frames: copy them into the file and empty the WAL.
    if (clear > 0) registry?.pragma('wal_checkpoint(TRUNCATE)');
  }
}

/** A Standard Webhooks secret: `whsec_` and base64 of 32 random bytes (the bytes sign). */
export const generateSecret = () => `whsec_${crypto.randomBytes(32).toString('base64')}`;

export class TooManyEndpoints extends Error {}

export interface EndpointInput {
  url: string;
  description: string | null;
  events: EventType[];
  format: WebhookFormat;
  active: boolean;
}

/**
 * Creates an endpoint (with a secret when it is `standard`); TooManyEndpoints past the cap. Run it
 * in a transaction: on PostgreSQL the team's row is locked first, so instances count in turn.
 */
export async function createEndpoint(sql: Sql, box: SecretBox, teamId: string, input: EndpointInput, now = Date.now()): Promise<WebhookEndpoint> {
  await lockTeam(sql, teamId);
  const { n } = (await sql.get<{ n: number }>('SELECT count(*) AS n FROM webhook_endpoints WHERE team_id = ?', [teamId]))!;
  if (Number(n) >= MAX_ENDPOINTS_PER_TEAM) throw new TooManyEndpoints(`a team has at most ${MAX_ENDPOINTS_PER_TEAM} webhook endpoints`);
  const id = newId('whk');
  const secret = input.format === 'standard' ? box.seal(generateSecret(), sealContext(id, 'secret')) : null;
  await sql.run(
    `INSERT INTO webhook_endpoints (id, team_id, url, description, events, format, active, secret, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [id, teamId, box.seal(input.url, sealContext(id, 'url')), input.description, JSON.stringify(input.events), input.format, input.active ? 1 : 0, secret, now, now],
  );
  return (await findEndpoint(sql, box, teamId, id))!;
}

const ENDPOINT_BY_ID = 'SELECT * FROM webhook_endpoints WHERE team_id = ? AND id = ?';

/**
 * One endpoint of the team, as steps: the dispatcher reads it inside its synchronous writes.
 * `lock`: on PostgreSQL its row stays locked until the transaction ends (a change made from what
 * was read is not lost to another instance's; SQLite's writes take turns).
 */
export function* endpointOf(box: SecretBox, teamId: string, id: string, lock = false): Steps<WebhookEndpoint | undefined> {
  const statement = lock ? { sqlite: ENDPOINT_BY_ID, postgres: `${numberedPlaceholders(ENDPOINT_BY_ID)} FOR UPDATE` } : ENDPOINT_BY_ID;
  const row = yield* get<EndpointRow>(statement, [teamId, id]);
  return row && toEndpoint(box, row);
}

/** One endpoint of the team (`lock`: see endpointOf). */
export function findEndpoint(sql: Sql, box: SecretBox, teamId: string, id: string, lock = false): Promise<WebhookEndpoint | undefined> {
  return perform(sql, endpointOf(box, teamId, id, lock));
}

/** A team's endpoints, oldest first (there are at most MAX_ENDPOINTS_PER_TEAM). */
export async function listEndpoints(sql: Sql, box: SecretBox, teamId: string): Promise<WebhookEndpoint[]> {
  return (await sql.all<EndpointRow>('SELECT * FROM webhook_endpoints WHERE team_id = ? ORDER BY created_at, id', [teamId])).map((r) => toEndpoint(box, r));
}

/** Changes some fields; turning an endpoint active again clears its disabled state. Undefined: no such endpoint. */
export async function updateEndpoint(
  sql: Sql,
  box: SecretBox,
  teamId: string,
  id: string,
  changes: Partial<Pick<EndpointInput, 'url' | 'description' | 'events' | 'active'>>,
  now = Date.now(),
): Promise<WebhookEndpoint | undefined> {
  const current = await findEndpoint(sql, box, teamId, id, true);
  if (!current) return undefined;
  const next = { ...current, ...changes };
  const reactivated = changes.active === true;
  await sql.run(
    `UPDATE webhook_endpoints SET url = coalesce(?, url), description = ?, events = ?, active = ?, updated_at = ?,
            disabled_at = CASE WHEN ? = 1 THEN NULL ELSE disabled_at END, disabled_reason = CASE WHEN ? = 1 THEN NULL ELSE disabled_reason END
      WHERE team_id = ? AND id = ?`,
    [
    // Sealed anew only when it changes: an unchanged URL keeps its stored value.
    changes.url === undefined ? null : box.seal(changes.url, sealContext(id, 'url')),
    next.description,
    JSON.stringify(next.events),
    next.active ? 1 : 0,
    now,
    reactivated ? 1 : 0,
    reactivated ? 1 : 0,
    teamId,
    id,
    ],
  );
  return findEndpoint(sql, box, teamId, id);
}

export async function deleteEndpoint(sql: Sql, teamId: string, id: string): Promise<boolean> {
  return (await sql.run('DELETE FROM webhook_endpoints WHERE team_id = ? AND id = ?', [teamId, id])) === 1;
}

/**
 * Replaces a standard endpoint's secret; the old one keeps signing for PREVIOUS_SECRET_MS.
 * Undefined: no such endpoint; null: a slack endpoint (it has no secret).
 */
export async function rotateSecret(sql: Sql, box: SecretBox, teamId: string, id: string, now = Date.now()): Promise<WebhookEndpoint | null | undefined> {
  const current = await findEndpoint(sql, box, teamId, id, true);
  if (!current) return undefined;
  if (current.format !== 'standard') return null;
  await sql.run('UPDATE webhook_endpoints SET secret = ?, previous_secret = ?, previous_secret_until = ?, updated_at = ? WHERE team_id = ? AND id = ?', [
    box.seal(generateSecret(), sealContext(id, 'secret')),
    current.secret === null ? null : box.seal(current.secret, sealContext(id, 'previous_secret')),
    now + PREVIOUS_SECRET_MS,
    now,
    teamId,
    id,
  ]);
  return findEndpoint(sql, box, teamId, id);
}

/** The secrets that sign a delivery now: the current one, and the previous one during its grace period. */
export function signingSecrets(endpoint: WebhookEndpoint, now = Date.now()): string[] {
  const secrets = endpoint.secret ? [endpoint.secret] : [];
  if (endpoint.previousSecret && endpoint.previousSecretUntil !== null && endpoint.previousSecretUntil > now) secrets.push(endpoint.previousSecret);
  return secrets;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface Delivery {
  seq: number;
  id: string;
  eventId: string;
  eventType: EventType;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastLatencyMs: number | null;
  lastError: string | null;
  responseBody: string | null;
  lastAttemptAt: number | null;
  nextAttemptAt: number | null;
  createdAt: number;
  deliveredAt: number | null;
}

interface DeliveryRow {
  seq: number;
  id: string;
  event_id: string;
  event_type: EventType;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  response_body: string | null;
  last_attempt_at: number | null;
  next_attempt_at: number | null;
  created_at: number;
  delivered_at: number | null;
}

const toDelivery = (r: DeliveryRow): Delivery => ({
  seq: r.seq,
  id: r.id,
  eventId: r.event_id,
  eventType: r.event_type,
  status: r.status,
  attempts: r.attempts,
  lastStatusCode: r.last_status_code,
  lastLatencyMs: r.last_latency_ms,
  lastError: r.last_error,
  responseBody: r.response_body,
  lastAttemptAt: r.last_attempt_at,
  nextAttemptAt: r.next_attempt_at,
  createdAt: r.created_at,
  deliveredAt: r.delivered_at,
});

/** An endpoint's deliveries, newest first. */
export async function listDeliveries(sql: Sql, teamId: string, endpointId: string, filter: { limit: number; beforeSeq?: number; status?: DeliveryStatus }): Promise<Delivery[]> {
  const where = ['team_id = ?', 'endpoint_id = ?'];
  const params: unknown[] = [teamId, endpointId];
  if (filter.beforeSeq !== undefined) (where.push('seq < ?'), params.push(filter.beforeSeq));
  if (filter.status !== undefined) (where.push('status = ?'), params.push(filter.status));
  return (await sql.all<DeliveryRow>(`SELECT * FROM webhook_deliveries WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`, [...params, filter.limit])).map(toDelivery);
}

export async function findDelivery(sql: Sql, teamId: string, endpointId: string, id: string): Promise<Delivery | undefined> {
  const row = await sql.get<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE team_id = ? AND endpoint_id = ? AND id = ?', [teamId, endpointId, id]);
  return row && toDelivery(row);
}
