/**
 * Alerts: the list with the API's filters (status, type, severity, agent, from/to, in the URL), and
 * an alert's page with its details, where it can be resolved with a note, or reopened.
 */
import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { AlertList, Severity } from '../components/alerts';
import { PagedList } from '../components/list';
import { Panel, useLoad } from '../components/panel';
import { useRefreshTick } from '../components/range-bar';
import { formatAmount, formatCount, formatTime } from '../format';
import { href, navigate, useLocation } from '../router';
import type { Alert } from '../types';

const FILTERS = {
  status: ['open', 'resolved'],
  type: ['violation', 'anomaly', 'system'],
  severity: ['critical', 'warning', 'info'],
} as const;

export function Alerts() {
  const location = useLocation();
  const tick = useRefreshTick();
  const params = new URLSearchParams(location.search);
  const query = Object.fromEntries(['status', 'type', 'severity', 'agent', 'from', 'to'].map((name) => [name, params.get(name) ?? undefined]));
  const set = (name: string, value: string) => {
    const next = new URLSearchParams(location.search);
    if (value) next.set(name, value);
    else next.delete(name);
    const text = next.toString();
    navigate(`/dashboard/alerts${text ? `?${text}` : ''}`, { replace: true });
  };
  const [agent, setAgent] = useState(query.agent ?? '');
  return (
    <>
      <div class="page-head">
        <h1>Alerts</h1>
      </div>
      <form class="filters" onSubmit={(e) => (e.preventDefault(), set('agent', agent.trim()))} aria-label="Filter alerts">
        {(Object.keys(FILTERS) as (keyof typeof FILTERS)[]).map((name) => (
          <label key={name}>
            {name[0]!.toUpperCase() + name.slice(1)}{' '}
            <select value={query[name] ?? ''} onChange={(e) => set(name, e.currentTarget.value)}>
              <option value="">any</option>
              {FILTERS[name].map((v) => (
                <option key={v} value={v}>
                  {v}
                </option>
              ))}
            </select>
          </label>
        ))}
        <label>
          Agent <input value={agent} onInput={(e) => setAgent(e.currentTarget.value)} onBlur={() => set('agent', agent.trim())} placeholder="any" />
        </label>
        <label>
          Seen since <input type="date" value={query.from?.slice(0, 10) ?? ''} onChange={(e) => set('from', e.currentTarget.value)} />
        </label>
        <label>
          Before <input type="date" value={query.to?.slice(0, 10) ?? ''} onChange={(e) => set('to', e.currentTarget.value)} />
        </label>
      </form>
      <PagedList<Alert> id="alerts-list" title="Alerts, newest first" path="/alerts" query={query} tick={tick} empty="No alert matches these filters.">
        {(alerts) => <AlertList alerts={alerts} />}
      </PagedList>
    </>
  );
}

export function AlertPage({ alertId }: { alertId: string }) {
  const tick = useRefreshTick();
  const [changed, setChanged] = useState(0);
  const load = useLoad((signal) => api<Alert>('GET', `/alerts/${encodeURIComponent(alertId)}`, { signal }), [alertId, changed], tick);
  return (
    <>
      <p class="crumbs">
        <a href={href('alerts')}>Alerts</a> /
      </p>
      <Panel id="alert" title="Alert" load={load}>
        {(alert) => <AlertDetails alert={alert} onChanged={() => setChanged((n) => n + 1)} />}
      </Panel>
    </>
  );
}

function AlertDetails({ alert, onChanged }: { alert: Alert; onChanged: () => void }) {
  const [note, setNote] = useState('');
  const [problem, setProblem] = useState<{ message: string; field?: string } | undefined>();
  const [busy, setBusy] = useState(false);
  const change = async (body: { status: 'open' | 'resolved'; note?: string }) => {
    setBusy(true);
    setProblem(undefined);
    try {
      await api('PATCH', `/alerts/${encodeURIComponent(alert.id)}`, { body });
      setNote('');
      onChanged();
    } catch (err) {
      const field = err instanceof ApiError ? err.fields[0] : undefined;
      setProblem({ message: field?.message ?? (err as Error).message, field: field?.field });
    } finally {
      setBusy(false);
    }
  };
  const rows: [string, string][] = [
    ['Agent', alert.agentId],
    ['Type', `${alert.type}, ${alert.kind}`],
    // An anomaly's figures are counts or ratios, a violation's are amounts: shown as given, grouped.
    ['Observed', formatAmount(alert.observed, { pad: false })],
    ['Limit', formatAmount(alert.limit, { pad: false })],
    ['Subject', alert.subject ?? '–'],
    ['Window', alert.window ? `${formatTime(alert.window.start)} to ${formatTime(alert.window.end)}` : '–'],
    ['Occurrences', formatCount(alert.count)],
    ['First seen', formatTime(alert.firstSeen)],
    ['Last seen', formatTime(alert.lastSeen)],
    ['Sample records', alert.sampleEventIds.join(', ') || '–'],
  ];
  if (alert.resolvedAt) rows.push(['Resolved', formatTime(alert.resolvedAt)], ['Note', alert.resolution ?? '–']);
  return (
    <div class="alert-details">
      <p class="alert-title">
        <Severity severity={alert.severity} /> <span class={`badge status-${alert.status}`} data-status={alert.status}>{alert.status}</span> {alert.message}
      </p>
      <dl class="facts">
        {rows.map(([name, value]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd>{name === 'Agent' ? <a href={href('agents', value)}>{value}</a> : value}</dd>
          </div>
        ))}
        {alert.policyId && (
          <div>
            <dt>Policy</dt>
            <dd>
              <a href={href('policies', alert.policyId)}>{String(alert.details.policyName ?? alert.policyId)}</a>
            </dd>
          </div>
        )}
      </dl>
      {alert.status === 'open' ? (
        <form class="stack" onSubmit={(e) => (e.preventDefault(), change(note.trim() ? { status: 'resolved', note: note.trim() } : { status: 'resolved' }))}>
          <label for="resolve-note">Note (optional): why it is resolved</label>
          <textarea id="resolve-note" rows={2} maxLength={2000} value={note} onInput={(e) => setNote(e.currentTarget.value)} aria-invalid={problem?.field === 'note' ? true : undefined} />
          <div>
            <button type="submit" disabled={busy}>
              Resolve
            </button>
          </div>
        </form>
      ) : (
        <button type="button" onClick={() => change({ status: 'open' })} disabled={busy}>
          Reopen
        </button>
      )}
      {problem && (
        <p class="field-error" role="alert">
          {problem.message}
        </p>
      )}
    </div>
  );
}

