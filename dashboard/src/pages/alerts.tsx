/**
 * Alerts: the list with the API's filters (status, type, severity, agent, from/to, in the URL), and
 * an alert's page with its details, where it can be resolved with a note, or reopened.
 */
import { useState } from 'preact/hooks';
import { Fragment, type ComponentChildren } from 'preact';
import { api, ApiError } from '../api';
import { useTeamAssets } from '../assets';
import { alertDenomination, alertTitle, CALL_COUNT_KINDS, AlertTable, ObservedAgainstLimit, Severity } from '../components/alerts';
import { ChangeButton, ReadOnlyNote } from '../components/change-controls';
import { PagedList } from '../components/list';
import { Panel, useLoad } from '../components/panel';
import { useRefreshTick, ZonePicker } from '../components/range-bar';
import { Time, TimeWindow } from '../components/time';
import { useChangeRight } from '../access';
import { formatCount } from '../format';
import { exactAmount } from '../money';
import { href, navigate, useLocation } from '../router';
import { rewriteTimes } from '../time';
import type { Alert } from '../types';
import { recordsHref } from './records';
import { useTimeZone } from '../zone';

const FILTERS = {
  status: ['open', 'resolved'],
  type: ['violation', 'anomaly', 'threshold', 'approval', 'settlement', 'system'],
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
        <ZonePicker />
      </form>
      <PagedList<Alert> id="alerts-list" title="Alerts, latest raised first" path="/alerts" query={query} tick={tick} empty="No alert matches these filters.">
        {(alerts) => <AlertTable alerts={alerts} />}
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
  const zone = useTimeZone();
  const team = useTeamAssets();
  const right = useChangeRight();
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
  // The detail: every digit, with the asset when it is known.
  const denomination = alertDenomination(alert, team);
  const unit = denomination.kind === 'asset' ? ` ${denomination.asset}` : '';
  const amountOrCount = (value: string | null) => (value === null ? '–' : CALL_COUNT_KINDS.has(alert.kind) ? value : `${exactAmount(value)}${unit}`);
  const rows: [string, ComponentChildren][] = [
    ['Agent', alert.agentId ? <a href={href('agents', alert.agentId)}>{alert.agentId}</a> : '–'],
    ['Policy', alert.policyId ? <a href={href('policies', alert.policyId)}>{String(alert.details.policyName ?? alert.policyId)}</a> : '–'],
    ['Type', `${alert.type}, ${alert.kind.replace(/_/g, ' ')}`],
    ['Observed against limit', <ObservedAgainstLimit alert={alert} />],
    ['Observed, exact', amountOrCount(alert.observed)],
    ['Limit, exact', amountOrCount(alert.limit)],
    // An approval's subject is the authorization waiting: answered on its page.
    ['Subject', alert.type === 'approval' && alert.subject ? <a href={href('authorizations', alert.subject)}>authorization {alert.subject}</a> : (alert.subject ?? '–')],
    [
      'Window',
      alert.window ? (
        <>
          <TimeWindow start={alert.window.start} end={alert.window.end} />
          {alert.agentId && (
            <>
              {' '}
              · <a href={recordsHref({ agent: alert.agentId, from: alert.window.start, to: alert.window.end ?? undefined })}>its records</a>
            </>
          )}
        </>
      ) : (
        '–'
      ),
    ],
    ['Times', formatCount(alert.count)],
    ['First seen', <Time iso={alert.firstSeen} />],
    ['Last seen', <Time iso={alert.lastSeen} />],
    ['Raised', <Time iso={alert.createdAt} />],
    [
      'Sample records',
      alert.sampleEventIds.length ? (
        <span class="sample-records">
          {alert.sampleEventIds.map((id, i) => (
            <Fragment key={id}>
              {i > 0 && ', '}
              <a href={href('records', id)} data-sample-record={id}>
                {id}
              </a>
            </Fragment>
          ))}
        </span>
      ) : (
        '–'
      ),
    ],
  ];
  if (alert.resolvedAt) rows.push(['Resolved', <Time iso={alert.resolvedAt} />], ['Note', alert.resolution ?? '–']);
  return (
    <div class="alert-details">
      <h2 class="alert-title">
        <Severity severity={alert.severity} />{' '}
        <span class={`badge status-${alert.status}`} data-status={alert.status}>
          {alert.status}
        </span>{' '}
        {alertTitle(alert)}
      </h2>
      {/* The service's own explanation, its times written like every other time here. */}
      <p class="alert-explanation" data-explanation>
        {rewriteTimes(alert.message, zone)}
      </p>
      <dl class="facts">
        {rows.map(([name, value]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
      <ReadOnlyNote />
      {alert.status === 'open' ? (
        <form class="stack" onSubmit={(e) => (e.preventDefault(), change(note.trim() ? { status: 'resolved', note: note.trim() } : { status: 'resolved' }))}>
          <label for="resolve-note">Note (optional): why it is resolved</label>
          <textarea
            id="resolve-note"
            rows={2}
            maxLength={2000}
            value={note}
            disabled={!right.allowed}
            onInput={(e) => setNote(e.currentTarget.value)}
            aria-invalid={problem?.field === 'note' ? true : undefined}
          />
          <div>
            <ChangeButton type="submit" disabled={busy}>
              Resolve
            </ChangeButton>
          </div>
        </form>
      ) : (
        <ChangeButton onClick={() => change({ status: 'open' })} disabled={busy}>
          Reopen
        </ChangeButton>
      )}
      {problem && (
        <p class="field-error" role="alert">
          {problem.message}
        </p>
      )}
    </div>
  );
}
