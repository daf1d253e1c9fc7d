/**
 * Team: this month's usage, the API keys (create with scopes, shown once; revoke), and the webhook
 * endpoints (add, turn on or off, send a test, delete) with each one's delivery log. Listing
 * webhooks, and every change here, needs an admin key; a read key sees the API's refusal.
 */
import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { PagedList } from '../components/list';
import { Panel, useLoad } from '../components/panel';
import { useRefreshTick } from '../components/range-bar';
import { formatAgo, formatAmount, formatCount, formatTime } from '../format';
import { href } from '../router';
import type { ApiKey, Delivery, Team, Webhook, WebhookEventType } from '../types';

const SCOPES = [
  { value: 'read', label: 'read: look at everything (dashboards, BI)' },
  { value: 'ingest', label: 'ingest: send records (agents with the SDK)' },
  { value: 'admin', label: 'admin: everything, changes included' },
] as const;
const EVENT_TYPES: WebhookEventType[] = ['alert.opened', 'alert.escalated', 'alert.resolved', 'alert.reopened'];

export function TeamPage() {
  const tick = useRefreshTick();
  const team = useLoad((signal) => api<Team>('GET', '/team', { signal }), [], tick);
  return (
    <>
      <div class="page-head">
        <h1>Team</h1>
      </div>
      <Panel id="usage" title="Usage this month" load={team}>
        {(t) => (
          <dl class="figures">
            <div class="figure">
              <dt>Team</dt>
              <dd class="value small">{t.name}</dd>
            </div>
            <div class="figure" data-field="spend">
              <dt>Spend</dt>
              <dd class="value">{formatAmount(t.usage.spend)}</dd>
            </div>
            <div class="figure" data-field="events">
              <dt>Records</dt>
              <dd class="value">{formatCount(t.usage.events)}</dd>
            </div>
            <div class="figure">
              <dt>Agents</dt>
              <dd class="value">{formatCount(t.usage.agents)}</dd>
            </div>
            <div class="figure">
              <dt>Active policies</dt>
              <dd class="value">{formatCount(t.usage.activePolicies)}</dd>
            </div>
            <div class="figure">
              <dt>Open alerts</dt>
              <dd class="value">{formatCount(t.usage.openAlerts)}</dd>
            </div>
            <div class="figure">
              <dt>Working keys</dt>
              <dd class="value">{formatCount(t.usage.activeApiKeys)}</dd>
            </div>
            <div class="figure">
              <dt>Period</dt>
              <dd class="value small">
                {formatTime(t.usage.period.start)} to {formatTime(t.usage.period.end)}
              </dd>
            </div>
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
  const [problem, setProblem] = useState('');
  const keys = useLoad((signal) => api<{ data: ApiKey[] }>('GET', '/keys', { signal }), [changed], tick);
  const revoke = async (key: ApiKey) => {
    if (!window.confirm(`Revoke the key "${key.name}" (${key.prefix}…)? Whatever uses it is refused from now on.`)) return;
    setProblem('');
    try {
      await api('DELETE', `/keys/${key.id}`);
      setChanged((n) => n + 1);
    } catch (err) {
      setProblem((err as Error).message);
    }
  };
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
          {problem && (
            <p class="field-error" role="alert">
              {problem}
            </p>
          )}
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Scopes</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Expires</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {k.data.map((key) => (
                  <tr key={key.id} data-key={key.id}>
                    <td>
                      {key.name}
                      <div class="muted">
                        <code>{key.prefix}…</code>
                      </div>
                    </td>
                    <td>{key.scopes.join(', ')}</td>
                    <td>{formatAgo(key.lastUsedAt)}</td>
                    <td>{key.expiresAt ? formatTime(key.expiresAt) : 'never'}</td>
                    <td>
                      <button type="button" class="danger" onClick={() => revoke(key)}>
                        Revoke
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <NewKey onCreated={(key) => (setCreated(key), setChanged((n) => n + 1))} />
        </>
      )}
    </Panel>
  );
}

function NewKey({ onCreated }: { onCreated: (key: ApiKey) => void }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['read']);
  const [expires, setExpires] = useState('');
  const [error, setError] = useState<ApiError | undefined>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const body: Record<string, unknown> = { name: name.trim(), scopes };
      if (expires) body.expires_at = new Date(expires).toISOString();
      const key = await api<ApiKey>('POST', '/keys', { body });
      setName('');
      onCreated(key);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unknown', (err as Error).message));
    }
  };
  const fieldMessage = (field: string) => error?.fields.find((f) => f.field === field || f.field.startsWith(`${field}[`))?.message;
  return (
    <details class="create">
      <summary>Create a key</summary>
      <form class="stack" onSubmit={submit} noValidate>
        <label for="key-name">Name (who holds it)</label>
        <input id="key-name" value={name} onInput={(e) => setName(e.currentTarget.value)} aria-invalid={fieldMessage('name') ? true : undefined} />
        {fieldMessage('name') && <p class="field-error">{fieldMessage('name')}</p>}
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
          {fieldMessage('scopes') && <p class="field-error">{fieldMessage('scopes')}</p>}
        </fieldset>
        <label for="key-expires">Expires (optional)</label>
        <input id="key-expires" type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
        {fieldMessage('expires_at') && <p class="field-error">{fieldMessage('expires_at')}</p>}
        {error && !error.fields.length && (
          <p class="field-error" role="alert">
            {error.message}
          </p>
        )}
        <div>
          <button type="submit">Create key</button>
        </div>
      </form>
    </details>
  );
}

function Webhooks({ tick }: { tick: number }) {
  const [changed, setChanged] = useState(0);
  const [secret, setSecret] = useState<{ url: string; secret: string } | undefined>();
  const [message, setMessage] = useState<{ text: string; bad?: boolean } | undefined>();
  const hooks = useLoad((signal) => api<{ data: Webhook[] }>('GET', '/webhooks', { signal }), [changed], tick);
  const act = async (what: () => Promise<string | void>) => {
    setMessage(undefined);
    try {
      const text = await what();
      if (text) setMessage({ text });
      setChanged((n) => n + 1);
    } catch (err) {
      setMessage({ text: (err as Error).message, bad: true });
    }
  };
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
          {message && (
            <p class={message.bad ? 'field-error' : 'notice'} role={message.bad ? 'alert' : 'status'}>
              {message.text}
            </p>
          )}
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
                        const r = await api<{ delivered: boolean; statusCode: number | null; error: string | null; latencyMs: number }>('POST', `/webhooks/${w.id}/test`);
                        return r.delivered ? `Test delivered: ${r.statusCode} in ${r.latencyMs} ms.` : `Test not delivered: ${r.error ?? `answered ${r.statusCode}`}.`;
                      })
                    }
                  >
                    Send test
                  </button>
                  <button type="button" onClick={() => act(() => api('PATCH', `/webhooks/${w.id}`, { body: { active: !w.active } }).then(() => undefined))}>
                    {w.active ? 'Turn off' : 'Turn on'}
                  </button>
                  <button
                    type="button"
                    class="danger"
                    onClick={() => window.confirm(`Delete the webhook ${w.url}?`) && act(() => api('DELETE', `/webhooks/${w.id}`).then(() => undefined))}
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
  const [error, setError] = useState<ApiError | undefined>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const w = await api<Webhook>('POST', '/webhooks', { body: { url: url.trim(), format, events } });
      setUrl('');
      onCreated(w);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unknown', (err as Error).message));
    }
  };
  const fieldMessage = (field: string) => error?.fields.find((f) => f.field === field || f.field.startsWith(`${field}[`))?.message;
  return (
    <details class="create">
      <summary>Add a webhook</summary>
      <form class="stack" onSubmit={submit} noValidate>
        <label for="webhook-url">URL</label>
        <input id="webhook-url" type="url" placeholder="https://hooks.example.com/spendscope" value={url} onInput={(e) => setUrl(e.currentTarget.value)} aria-invalid={fieldMessage('url') ? true : undefined} />
        {fieldMessage('url') && <p class="field-error">{fieldMessage('url')}</p>}
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
          {fieldMessage('events') && <p class="field-error">{fieldMessage('events')}</p>}
        </fieldset>
        {error && !error.fields.length && (
          <p class="field-error" role="alert">
            {error.message}
          </p>
        )}
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
  const [message, setMessage] = useState<{ text: string; bad?: boolean } | undefined>();
  const hook = useLoad((signal) => api<Webhook>('GET', `/webhooks/${encodeURIComponent(webhookId)}`, { signal }), [webhookId], tick);
  const retry = async (d: Delivery) => {
    setMessage(undefined);
    try {
      const r = await api<{ delivered: boolean; statusCode: number | null; error: string | null }>('POST', `/webhooks/${webhookId}/deliveries/${d.id}/retry`);
      setMessage(r.delivered ? { text: `Delivered: ${r.statusCode}.` } : { text: `Not delivered: ${r.error ?? `answered ${r.statusCode}`}.`, bad: true });
    } catch (err) {
      setMessage({ text: (err as Error).message, bad: true });
    }
    setChanged((n) => n + 1);
  };
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
      {message && (
        <p class={message.bad ? 'field-error' : 'notice'} role={message.bad ? 'alert' : 'status'}>
          {message.text}
        </p>
      )}
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
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                  <th scope="col">Last answer</th>
                  <th scope="col">Next attempt</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {deliveries.map((d) => (
                  <tr key={d.id} data-delivery={d.id}>
                    <td>
                      {d.eventType}
                      <div class="muted">{formatTime(d.createdAt)}</div>
                    </td>
                    <td>
                      <span class={`badge status-${d.status}`}>{d.status}</span>
                    </td>
                    <td class="num">{d.attempts}</td>
                    <td>
                      {d.lastStatusCode ?? '–'}
                      {d.lastLatencyMs !== null && ` in ${d.lastLatencyMs} ms`}
                      {d.lastError && <div class="muted">{d.lastError}</div>}
                    </td>
                    <td>{d.nextAttemptAt ? formatTime(d.nextAttemptAt) : '–'}</td>
                    <td>
                      {d.status === 'failed' && (
                        <button type="button" onClick={() => retry(d)}>
                          Send again
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </PagedList>
    </>
  );
}
