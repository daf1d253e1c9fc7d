/**
 * Team: this month's usage, the API keys (create with scopes, shown once; revoke), and the webhook
 * endpoints (add, turn on or off, send a test, delete) with each one's delivery log. Listing
 * webhooks, and every change here, needs an admin key: a read key sees why, not a refusal.
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { useChangeRight } from '../access';
import { useAssets } from '../assets';
import { ChangeButton, ReadOnlyNote } from '../components/change-controls';
import { Figure } from '../components/figure';
import { Money } from '../components/money';
import { Time, TimeWindow } from '../components/time';
import { FieldMessage, FormError, invalidProps, OutcomeMessage, useOutcome, useSubmit } from '../components/form';
import { PagedList } from '../components/list';
import { Panel, useLoad } from '../components/panel';
import { useRefreshTick } from '../components/range-bar';
import { TableHead } from '../components/table-head';
import { formatCount } from '../format';
import { href } from '../router';
import type { ApiKey, Delivery, Team, Webhook, WebhookEventType } from '../types';

const SCOPES = [
  { value: 'read', label: 'read: look at everything (dashboards, BI)' },
  { value: 'ingest', label: 'ingest: send records (agents with the SDK)' },
  { value: 'approve', label: 'approve: approve or deny payments waiting for a person' },
  { value: 'admin', label: 'admin: everything, changes included' },
] as const;
const EVENT_TYPES: WebhookEventType[] = ['alert.opened', 'alert.escalated', 'alert.resolved', 'alert.reopened'];

/** What a delivery attempt sent now came to (POST …/test, …/retry). */
interface Attempt {
  delivered: boolean;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
}
const attemptFailure = (a: Attempt) => a.error ?? `answered ${a.statusCode}`;

export function TeamPage() {
  const tick = useRefreshTick();
  const team = useLoad((signal) => api<Team>('GET', '/team', { signal }), [], tick);
  const period = team.data?.usage.period;
  // This month's spend is in the assets of this month's records.
  const assets = useAssets(period ? { from: period.start, to: period.end } : { from: 0, to: 0 }, tick);
  return (
    <>
      <div class="page-head">
        <h1>Team</h1>
      </div>
      <Panel id="usage" title="Usage this month" load={team}>
        {(t) => (
          <dl class="figures">
            <Figure small name="Team" value={t.name} />
            <Figure name="Spend" value={<Money value={t.usage.spend} denomination={assets.denomination} />} field="spend" />
            <Figure name="Records" value={formatCount(t.usage.events)} field="events" />
            <Figure name="Agents" value={formatCount(t.usage.agents)} />
            <Figure name="Active policies" value={formatCount(t.usage.activePolicies)} />
            <Figure name="Open alerts" value={formatCount(t.usage.openAlerts)} />
            <Figure name="Working keys" value={formatCount(t.usage.activeApiKeys)} />
            <Figure small name="Period" value={<TimeWindow start={t.usage.period.start} end={t.usage.period.end} />} />
          </dl>
        )}
      </Panel>
      <Keys tick={tick} />
      <Webhooks tick={tick} />
    </>
  );
}

function Keys({ tick }: { tick: number }) {
  const [changed, setChanged] = useState(0);
  const [created, setCreated] = useState<ApiKey | undefined>();
  const [outcome, run] = useOutcome(() => setChanged((n) => n + 1));
  const keys = useLoad((signal) => api<{ data: ApiKey[] }>('GET', '/keys', { signal }), [changed], tick);
  const right = useChangeRight();
  const revoke = (key: ApiKey) =>
    window.confirm(`Revoke the key "${key.name}" (${key.prefix}…)? Whatever uses it is refused from now on.`) && run(() => api('DELETE', `/keys/${key.id}`));
  return (
    <Panel id="keys" title="API keys" load={keys} isEmpty={(k) => k.data.length === 0} empty="No working keys.">
      {(k) => (
        <>
          {created?.apiKey && (
            <div class="notice" role="status">
              <p>
                The key <strong>{created.name}</strong>, shown only this once. Store it now:
              </p>
              <code class="secret" data-secret="api-key">
                {created.apiKey}
              </code>
            </div>
          )}
          <OutcomeMessage outcome={outcome} />
          <ReadOnlyNote />
          <ul class="key-list">
            {k.data.map((key) => (
              <li key={key.id} data-key={key.id}>
                <div class="key-main">
                  <strong>{key.name}</strong> <code class="muted">{key.prefix}…</code>
                  <div class="muted">
                    {key.scopes.join(', ')} · last used <Time iso={key.lastUsedAt} empty="never" /> · expires <Time iso={key.expiresAt} empty="never" absolute />
                  </div>
                </div>
                <ChangeButton class="danger" onClick={() => revoke(key)}>
                  Revoke
                </ChangeButton>
              </li>
            ))}
          </ul>
          {right.allowed && <NewKey onCreated={(key) => (setCreated(key), setChanged((n) => n + 1))} />}
        </>
      )}
    </Panel>
  );
}

function NewKey({ onCreated }: { onCreated: (key: ApiKey) => void }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['read']);
  const [expires, setExpires] = useState('');
  const [error, submit] = useSubmit(async () => {
    const body: Record<string, unknown> = { name: name.trim(), scopes };
    if (expires) body.expires_at = new Date(expires).toISOString();
    const key = await api<ApiKey>('POST', '/keys', { body });
    setName('');
    onCreated(key);
  });
  return (
    <details class="create">
      <summary>Create a key</summary>
      <form class="stack" onSubmit={submit} noValidate>
        <label for="key-name">Name (who holds it)</label>
        <input id="key-name" value={name} onInput={(e) => setName(e.currentTarget.value)} {...invalidProps(error, 'name')} />
        <FieldMessage error={error} field="name" />
        <fieldset>
          <legend>Scopes</legend>
          {SCOPES.map((s) => (
            <label key={s.value} class="check">
              <input
                type="checkbox"
                checked={scopes.includes(s.value)}
                onChange={(e) => setScopes((all) => (e.currentTarget.checked ? [...all, s.value] : all.filter((x) => x !== s.value)))}
              />{' '}
              {s.label}
            </label>
          ))}
          <FieldMessage error={error} field="scopes" />
        </fieldset>
        <label for="key-expires">Expires (optional)</label>
        <input id="key-expires" type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
        <FieldMessage error={error} field="expires_at" />
        <FormError error={error} />
        <div>
          <button type="submit">Create key</button>
        </div>
      </form>
    </details>
  );
}

/** Webhooks are an admin's: a key that may not change things is not asked to list them either. */
function Webhooks({ tick }: { tick: number }) {
  const right = useChangeRight();
  if (!right.allowed) {
    return (
      <section class="panel" data-panel="webhooks" data-state="ready" aria-labelledby="webhooks-title">
        <header class="panel-head">
          <h2 id="webhooks-title">Webhooks</h2>
        </header>
        <ReadOnlyNote>Webhook endpoints are seen and changed with an admin key. {right.reason}</ReadOnlyNote>
      </section>
    );
  }
  return <WebhookList tick={tick} />;
}

function WebhookList({ tick }: { tick: number }) {
  const [changed, setChanged] = useState(0);
  const [secret, setSecret] = useState<{ url: string; secret: string } | undefined>();
  const [outcome, act] = useOutcome(() => setChanged((n) => n + 1));
  const hooks = useLoad((signal) => api<{ data: Webhook[] }>('GET', '/webhooks', { signal }), [changed], tick);
  return (
    <Panel id="webhooks" title="Webhooks" load={hooks} isEmpty={() => false}>
      {(h) => (
        <>
          {secret && (
            <div class="notice" role="status">
              <p>
                The signing secret of {secret.url}, shown only this once. Verify deliveries with it (see the README):
              </p>
              <code class="secret">{secret.secret}</code>
            </div>
          )}
          <OutcomeMessage outcome={outcome} />
          {h.data.length === 0 && <div class="state empty">No webhook endpoints: alerts reach nobody until someone looks.</div>}
          <ul class="webhook-list">
            {h.data.map((w) => (
              <li key={w.id} data-webhook={w.id}>
                <div>
                  <a href={href('team', 'webhooks', w.id)}>{w.url}</a> <span class={`badge status-${w.active ? 'active' : 'inactive'}`}>{w.active ? 'active' : 'off'}</span>{' '}
                  <span class="badge">{w.format}</span>
                  <div class="muted">
                    {w.events.join(', ')}
                    {w.disabledReason ? ` · disabled: ${w.disabledReason}` : ''}
                  </div>
                </div>
                <div class="policy-actions">
                  <button
                    type="button"
                    onClick={() =>
                      act(async () => {
                        const r = await api<Attempt>('POST', `/webhooks/${w.id}/test`);
                        if (!r.delivered) throw new Error(`Test not delivered: ${attemptFailure(r)}.`);
                        return `Test delivered: ${r.statusCode} in ${r.latencyMs} ms.`;
                      })
                    }
                  >
                    Send test
                  </button>
                  <button type="button" onClick={() => act(() => api('PATCH', `/webhooks/${w.id}`, { body: { active: !w.active } }))}>
                    {w.active ? 'Turn off' : 'Turn on'}
                  </button>
                  <button
                    type="button"
                    class="danger"
                    onClick={() => window.confirm(`Delete the webhook ${w.url}?`) && act(() => api('DELETE', `/webhooks/${w.id}`))}
                  >
                    Delete
                  </button>
                </div>
              </li>
            ))}
          </ul>
          <NewWebhook onCreated={(w) => (w.secret && setSecret({ url: w.url, secret: w.secret }), setChanged((n) => n + 1))} />
        </>
      )}
    </Panel>
  );
}

function NewWebhook({ onCreated }: { onCreated: (w: Webhook) => void }) {
  const [url, setUrl] = useState('');
  const [format, setFormat] = useState<'standard' | 'slack'>('standard');
  const [events, setEvents] = useState<WebhookEventType[]>(['alert.opened', 'alert.escalated']);
  const [error, submit] = useSubmit(async () => {
    const w = await api<Webhook>('POST', '/webhooks', { body: { url: url.trim(), format, events } });
    setUrl('');
    onCreated(w);
  });
  return (
    <details class="create">
      <summary>Add a webhook</summary>
      <form class="stack" onSubmit={submit} noValidate>
        <label for="webhook-url">URL</label>
        <input id="webhook-url" type="url" placeholder="https://hooks.example.com/spendscope" value={url} onInput={(e) => setUrl(e.currentTarget.value)} {...invalidProps(error, 'url')} />
        <FieldMessage error={error} field="url" />
        <label for="webhook-format">Format</label>
        <select id="webhook-format" value={format} onChange={(e) => setFormat(e.currentTarget.value as 'standard' | 'slack')}>
          <option value="standard">standard: signed JSON (Standard Webhooks)</option>
          <option value="slack">slack: a Slack incoming-webhook message</option>
        </select>
        <fieldset>
          <legend>Events</legend>
          {EVENT_TYPES.map((t) => (
            <label key={t} class="check">
              <input type="checkbox" checked={events.includes(t)} onChange={(e) => setEvents((all) => (e.currentTarget.checked ? [...all, t] : all.filter((x) => x !== t)))} /> {t}
            </label>
          ))}
          <FieldMessage error={error} field="events" />
        </fieldset>
        <FormError error={error} />
        <div>
          <button type="submit">Add webhook</button>
        </div>
      </form>
    </details>
  );
}

/** One endpoint's delivery log, newest first, with a status filter; a failed delivery can be sent again. */
export function WebhookPage({ webhookId }: { webhookId: string }) {
  const tick = useRefreshTick();
  const [status, setStatus] = useState('');
  const [changed, setChanged] = useState(0);
  const [outcome, run] = useOutcome(() => setChanged((n) => n + 1));
  const hook = useLoad((signal) => api<Webhook>('GET', `/webhooks/${encodeURIComponent(webhookId)}`, { signal }), [webhookId], tick);
  const retry = (d: Delivery) =>
    run(async () => {
      const r = await api<Attempt>('POST', `/webhooks/${webhookId}/deliveries/${d.id}/retry`);
      if (!r.delivered) throw new Error(`Not delivered: ${attemptFailure(r)}.`);
      return `Delivered: ${r.statusCode}.`;
    });
  return (
    <>
      <p class="crumbs">
        <a href={href('team')}>Team</a> / Webhooks /
      </p>
      <Panel id="webhook" title="Webhook" load={hook}>
        {(w) => (
          <p>
            <strong>{w.url}</strong> · {w.format} · {w.active ? 'active' : 'off'} · {w.events.join(', ')}
          </p>
        )}
      </Panel>
      <OutcomeMessage outcome={outcome} />
      <PagedList<Delivery>
        id="deliveries"
        title="Delivery log, newest first"
        path={`/webhooks/${encodeURIComponent(webhookId)}/deliveries`}
        query={{ status: status || undefined }}
        version={changed}
        tick={tick}
        empty="No deliveries."
        actions={
          <label>
            Status{' '}
            <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
              <option value="">any</option>
              <option value="pending">pending</option>
              <option value="delivered">delivered</option>
              <option value="failed">failed</option>
            </select>
          </label>
        }
      >
        {(deliveries) => (
          <table class="rows-table">
            <TableHead columns={['Event', 'Status', { label: 'Attempts', num: true }, 'Last answer', 'Next attempt', { label: 'Actions', hidden: true }]} />
            <tbody>
              {deliveries.map((d) => (
                <tr key={d.id} data-delivery={d.id}>
                  <td class="row-main">
                    {d.eventType}
                    <div class="muted">
                      <Time iso={d.createdAt} />
                    </div>
                  </td>
                  <td data-label="Status">
                    <span class={`badge status-${d.status}`}>{d.status}</span>
                  </td>
                  <td class="num" data-label="Attempts">
                    {d.attempts}
                  </td>
                  <td data-label="Last answer">
                    {d.lastStatusCode ?? '–'}
                    {d.lastLatencyMs !== null && ` in ${d.lastLatencyMs} ms`}
                    {d.lastError && <div class="muted">{d.lastError}</div>}
                  </td>
                  <td data-label="Next attempt">
                    <Time iso={d.nextAttemptAt} absolute />
                  </td>
                  <td>{d.status === 'failed' && <ChangeButton onClick={() => retry(d)}>Send again</ChangeButton>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </PagedList>
    </>
  );
}
