/**
 * Code that registry migrations run where SQL cannot compute what they write. The step named as a
 * migration file (`NNN_<name>.sql`, the same name on SQLite and PostgreSQL) runs first, in the
 * migration's transaction, and leaves its results in a temporary table; the file's SQL writes them
 * in and drops it. So what a migration changes is still read in its SQL file.
 */
import { shownUrl } from '../domain/shown-url.js';
import { all, run, type Steps } from './sql.js';

export type MigrationStep = () => Steps<void>;

interface FieldChange {
  before: unknown;
  after: unknown;
}

/** An alert of an endpoint disabled, as stored and as its events carry it in `data`. */
interface DisabledAlert {
  details: { endpointId?: unknown; url?: unknown } & Record<string, unknown>;
  message: string;
}

/**
 * The alert with its URL, in its details and its message, as `shown` shows it; undefined when that
 * changes nothing.
 */
function maskedAlert(alert: DisabledAlert, shown: (url: unknown, endpointId: unknown) => unknown): DisabledAlert | undefined {
  const url = alert.details.url;
  const masked = shown(url, alert.details.endpointId);
  if (typeof url !== 'string' || typeof masked !== 'string' || masked === url) return undefined;
  return { details: { ...alert.details, url: masked }, message: alert.message.split(url).join(masked) };
}

/**
 * mask_webhook_urls: the webhook URLs stored in clear outside their sealed column, as
 * shownUrl shows them now, into `webhook_url_rewrites` (table, row id, column, new value): the
 * audit log's entries of endpoints, the alerts of endpoints disabled, and the events that carried
 * those alerts. A slack URL masked before is masked again: with a trailing slash its token was left.
 */
function* maskWebhookUrls(): Steps<void> {
  yield* run('CREATE TEMP TABLE webhook_url_rewrites (row_table TEXT NOT NULL, row_id TEXT NOT NULL, row_column TEXT NOT NULL, value TEXT NOT NULL)');
  const rewrite = (table: string, id: string, column: string, value: string) =>
    run('INSERT INTO webhook_url_rewrites (row_table, row_id, row_column, value) VALUES (?, ?, ?, ?)', [table, id, column, value]);

  const entries = yield* all<{ id: string; resource_id: string; changes: string }>(
    "SELECT id, resource_id, changes FROM management_audit WHERE resource_type = 'webhook' ORDER BY seq",
  );
  // An endpoint's format, from its row, or from the log's entries of it when it was deleted since.
  const formats = new Map<string, string>();
  for (const entry of entries) {
    const format = (JSON.parse(entry.changes) as Record<string, FieldChange | undefined>).format;
    const value = format?.after ?? format?.before;
    if (typeof value === 'string') formats.set(entry.resource_id, value);
  }
  for (const endpoint of yield* all<{ id: string; format: string }>('SELECT id, format FROM webhook_endpoints')) formats.set(endpoint.id, endpoint.format);
  // Only URLs: a value that does not parse was never one (a URL that did not decrypt, in an alert).
  const shown = (url: unknown, endpointId: unknown) =>
    typeof url === 'string' && URL.canParse(url) ? shownUrl(url, formats.get(String(endpointId)) ?? 'standard') : url;

  for (const entry of entries) {
    const changes = JSON.parse(entry.changes) as Record<string, FieldChange | undefined>;
    if (!changes.url) continue;
    const url = { before: shown(changes.url.before, entry.resource_id), after: shown(changes.url.after, entry.resource_id) };
    if (url.before === changes.url.before && url.after === changes.url.after) continue;
    yield* rewrite('management_audit', entry.id, 'changes', JSON.stringify({ ...changes, url }));
  }

  const alerts = yield* all<{ id: string; details: string; message: string }>("SELECT id, details, message FROM alerts WHERE kind = 'webhook_disabled'");
  for (const alert of alerts) {
    const masked = maskedAlert({ details: JSON.parse(alert.details) as DisabledAlert['details'], message: alert.message }, shown);
    if (!masked) continue;
    yield* rewrite('alerts', alert.id, 'details', JSON.stringify(masked.details));
    yield* rewrite('alerts', alert.id, 'message', masked.message);
  }

  const deliveries = yield* all<{ id: string; payload: string }>("SELECT id, payload FROM webhook_deliveries WHERE payload LIKE '%webhook_disabled%'");
  for (const delivery of deliveries) {
    const event = JSON.parse(delivery.payload) as { data?: Partial<DisabledAlert> & { kind?: unknown } };
    const data = event.data;
    if (data?.kind !== 'webhook_disabled' || !data.details || typeof data.message !== 'string') continue;
    const masked = maskedAlert({ details: data.details, message: data.message }, shown);
    if (masked) yield* rewrite('webhook_deliveries', delivery.id, 'payload', JSON.stringify({ ...event, data: { ...data, ...masked } }));
  }
}

/** The steps by migration name (the file's name without its number). */
export const MIGRATION_STEPS: Readonly<Record<string, MigrationStep>> = {
  mask_webhook_urls: maskWebhookUrls,
};
