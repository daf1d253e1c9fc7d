/**
 * The management audit log (GET /audit-log, admin only): who changed what and when, each changed
 * field before and after, newest first, filtered by the kind of resource or one resource. A key
 * without admin is not offered the page: its link is not in the menu, and the page itself says
 * why without asking the API.
 */
import { useAccess, useMayReadAuditLog } from '../access';
import { ChoiceFilter, TextFilter } from '../components/filters';
import { PagedList } from '../components/list';
import { useRefreshTick, ZonePicker } from '../components/range-bar';
import { Time } from '../components/time';
import { href, useLocation } from '../router';
import { rewriteTimes } from '../time';
import type { ManagementAction, ManagementChange } from '../types';
import { useTimeZone } from '../zone';

const RESOURCE_TYPES = ['policy', 'alert', 'agent', 'key', 'webhook', 'team', 'rate'] as const;

const ACTION_WORDS: Record<ManagementAction, string> = {
  'key.create': 'created the key',
  'key.revoke': 'revoked the key',
  'key.rotate': 'rotated the key',
  'agent.create': 'added the agent',
  'agent.update': 'changed the agent',
  'agent.delete': 'deleted the agent',
  'policy.create': 'created the policy',
  'policy.update': 'changed the policy',
  'policy.delete': 'deleted the policy',
  'alert.resolve': 'resolved the alert',
  'alert.reopen': 'reopened the alert',
  'webhook.create': 'added the webhook',
  'webhook.update': 'changed the webhook',
  'webhook.delete': 'deleted the webhook',
  'webhook.rotate-secret': 'rotated the secret of the webhook',
  'team.update': 'changed the team',
  'rate.set': 'set the rate of',
  'rate.end': 'ended the rate of',
};

export function AuditLog() {
  const access = useAccess();
  const mayRead = useMayReadAuditLog();
  if (!mayRead) {
    return (
      <>
        <div class="page-head">
          <h1>Audit log</h1>
        </div>
        <section class="panel" data-panel="audit-log" data-state="ready" aria-label="Audit log">
          <p class="read-only-note" data-read-only>
            {access
              ? `The audit log is read with an admin key: the key “${access.name}” has ${access.scopes.join(', ') || 'no scopes'}.`
              : 'Checking what this key may read…'}
          </p>
        </section>
      </>
    );
  }
  return <AuditLogList />;
}

function AuditLogList() {
  const location = useLocation();
  const tick = useRefreshTick();
  const params = new URLSearchParams(location.search);
  const query = { resource_type: params.get('resource_type') ?? undefined, resource_id: params.get('resource_id') ?? undefined };
  return (
    <>
      <div class="page-head">
        <h1>Audit log</h1>
      </div>
      <form class="filters" aria-label="Filter changes" onSubmit={(e) => e.preventDefault()}>
        <ChoiceFilter label="Resource" name="resource_type" value={query.resource_type ?? ''} choices={RESOURCE_TYPES} />
        <TextFilter label="Resource id" name="resource_id" value={query.resource_id ?? ''} />
        <ZonePicker />
      </form>
      <PagedList<ManagementChange> id="audit-log" title="Changes, newest first" path="/audit-log" query={query} tick={tick} empty="No change matches these filters.">
        {(changes) => (
          <ul class="change-list">
            {changes.map((c) => (
              <Change key={c.id} change={c} />
            ))}
          </ul>
        )}
      </PagedList>
    </>
  );
}

/** Where a resource can be seen, unless the change deleted it (or it is a key: the Team page lists the working ones). */
function resourceHref(change: ManagementChange): string | undefined {
  if (change.action.endsWith('.delete')) return undefined;
  switch (change.resourceType) {
    case 'policy':
      return href('policies', change.resourceId);
    case 'alert':
      return href('alerts', change.resourceId);
    case 'agent':
      return href('agents', change.resourceId);
    case 'webhook':
      return href('team', 'webhooks', change.resourceId);
    case 'rate':
      return href('rates');
    case 'team':
      return href('team');
    default:
      return undefined;
  }
}

/** The resource by its name when the change names it, else its id. */
function resourceLabel(change: ManagementChange): string {
  const name = change.changes.name;
  const named = [name?.after, name?.before].find((n): n is string => typeof n === 'string' && n !== '');
  return named ?? change.resourceId;
}

function Change({ change }: { change: ManagementChange }) {
  const link = resourceHref(change);
  const label = resourceLabel(change);
  const fields = Object.entries(change.changes);
  return (
    <li data-change={change.id} data-action={change.action} data-resource={change.resourceId}>
      <p class="change-head">
        <Time iso={change.at} /> · <strong data-key-name>{change.keyName}</strong> {ACTION_WORDS[change.action] ?? change.action}{' '}
        {link ? <a href={link}>{label}</a> : <span class="change-resource">{label}</span>}
        {label !== change.resourceId && <span class="muted"> ({change.resourceId})</span>}
      </p>
      <p class="muted change-request">
        {change.method} {change.route} · request <code>{change.requestId}</code>
      </p>
      {fields.length > 0 && (
        <table class="change-fields">
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Before</th>
              <th scope="col">After</th>
            </tr>
          </thead>
          <tbody>
            {fields.map(([field, { before, after }]) => (
              <tr key={field} data-field={field}>
                <th scope="row">{field}</th>
                <td data-before>
                  <ChangeValue value={before} />
                </td>
                <td data-after>
                  <ChangeValue value={after} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </li>
  );
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** A field's value: a time in the one format, a text as it is, anything else as compact JSON (its times rewritten). */
function ChangeValue({ value }: { value: unknown }) {
  const zone = useTimeZone();
  if (value === null || value === undefined) return <span class="muted">–</span>;
  if (typeof value === 'string' && ISO_INSTANT.test(value)) return <Time iso={value} absolute />;
  if (typeof value === 'string') return <span class="change-text">{value}</span>;
  return <code class="change-json">{rewriteTimes(JSON.stringify(value), zone)}</code>;
}
