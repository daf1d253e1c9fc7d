/**
 * Authorizations: payments asked for before they were made. Those an `approve` policy holds for a
 * person come first ("Waiting for a decision"), each with Approve and Deny (and an optional note)
 * for a key with `approve` or `admin`; then the rest, newest first, declined ones with their
 * reasons. Filters (status, agent, created from/until) live in the URL. An authorization's page
 * has every check of its decision.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { useMayApprove } from '../access';
import { useTeamAssets } from '../assets';
import { ChoiceFilter, TextFilter, TimeFilter } from '../components/filters';
import { OutcomeMessage, type Outcome } from '../components/form';
import { PagedList } from '../components/list';
import { Money } from '../components/money';
import { Network } from '../components/network';
import { Panel, useLoad } from '../components/panel';
import { useRefreshTick, ZonePicker } from '../components/range-bar';
import { TableHead } from '../components/table-head';
import { Time, TimeWindow } from '../components/time';
import { formatCalls, isCallKind, KIND_WORDS } from '../limits';
import { denominationOf, exactAmount, formatMoney, shownAmount, UNKNOWN, type Denomination } from '../money';
import { href, useLocation } from '../router';
import type { Authorization, AuthorizationCheck } from '../types';

const STATUSES = ['pending', 'held', 'captured', 'voided', 'expired', 'declined'] as const;

/** What its amount is in: the asset it named, if any. */
const authorizationDenomination = (a: Pick<Authorization, 'asset'>): Denomination => (a.asset ? denominationOf([a.asset]) : UNKNOWN);

export function Authorizations() {
  const location = useLocation();
  const tick = useRefreshTick();
  const [decided, setDecided] = useState(0);
  const [outcome, setOutcome] = useState<Outcome | undefined>();
  const params = new URLSearchParams(location.search);
  const status = params.get('status') ?? '';
  const filter = { agent: params.get('agent') ?? undefined, from: params.get('from') ?? undefined, to: params.get('to') ?? undefined };
  const onDecided = (what: Outcome) => (setOutcome(what), setDecided((n) => n + 1));
  return (
    <>
      <div class="page-head">
        <h1>Authorizations</h1>
      </div>
      <form class="filters" aria-label="Filter authorizations" onSubmit={(e) => e.preventDefault()}>
        <ChoiceFilter label="Status" name="status" value={status} choices={STATUSES} />
        <TextFilter label="Agent" name="agent" value={filter.agent ?? ''} />
        <TimeFilter label="Asked from" name="from" value={filter.from ?? ''} />
        <TimeFilter label="Until" name="to" value={filter.to ?? ''} />
        <ZonePicker />
      </form>
      <OutcomeMessage outcome={outcome} />
      {(status === '' || status === 'pending') && (
        <PagedList<Authorization>
          id="pending"
          title="Waiting for a decision"
          path="/authorizations"
          query={{ ...filter, status: 'pending' }}
          tick={tick}
          version={decided}
          empty="Nothing is waiting for a decision."
        >
          {(items) => (
            <ul class="pending-list">
              {items.map((a) => (
                <PendingItem key={a.id} authorization={a} onDecided={onDecided} />
              ))}
            </ul>
          )}
        </PagedList>
      )}
      {status !== 'pending' && (
        <PagedList<Authorization>
          id="authorizations-list"
          title={status ? `Authorizations ${status}, newest first` : 'Decided, newest first'}
          path="/authorizations"
          query={{ ...filter, status: status || undefined }}
          tick={tick}
          version={decided}
          empty="No authorization matches these filters."
        >
          {/* Without a status filter, the pending ones are in their own list above. */}
          {(items) => <AuthorizationTable authorizations={status ? items : items.filter((a) => a.status !== 'pending')} />}
        </PagedList>
      )}
    </>
  );
}

export function AuthorizationStatus({ authorization }: { authorization: Pick<Authorization, 'status'> }) {
  return (
    <span class={`badge status-${authorization.status}`} data-status={authorization.status}>
      {authorization.status}
    </span>
  );
}

/** Reasons as a list: why it was declined, or which policies it breaks. */
function Reasons({ reasons }: { reasons: string[] }) {
  if (!reasons.length) return null;
  return (
    <ul class="reasons" data-reasons>
      {reasons.map((r, i) => (
        <li key={i}>{r}</li>
      ))}
    </ul>
  );
}

function PendingItem({ authorization: a, onDecided }: { authorization: Authorization; onDecided: (outcome: Outcome) => void }) {
  return (
    <li data-authorization={a.id} data-status={a.status}>
      <div class="pending-main">
        <p class="pending-what">
          <strong>
            <Money value={a.amount} denomination={authorizationDenomination(a)} />
          </strong>
          {/* A person deciding reads every digit. */}
          {shownAmount(a.amount).rounded && <span class="muted"> (exactly {exactAmount(a.amount)})</span>} by <a href={href('agents', a.agent_id)}>{a.agent_id}</a> to <span class="endpoint">{a.endpoint}</span>
        </p>
        <Reasons reasons={a.reasons} />
        <p class="muted">
          Asked <Time iso={a.created_at} />
          {a.pending_until && (
            <>
              {' '}
              · waits until <Time iso={a.pending_until} absolute />
            </>
          )}{' '}
          · <a href={href('authorizations', a.id)}>details</a>
        </p>
      </div>
      <Decide authorization={a} onDecided={onDecided} />
    </li>
  );
}

/**
 * Approve or deny, with an optional note: only for a key that may (the controls are not shown to
 * another). Someone else may have answered first (or the wait ended): the 409 says so, and what
 * it is now is read again. The outcome is the caller's to show: the controls go with the answer.
 */
function Decide({ authorization, onDecided }: { authorization: Authorization; onDecided: (outcome: Outcome) => void }) {
  const mayApprove = useMayApprove();
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | undefined>();
  if (!mayApprove || authorization.status !== 'pending') return null;
  const noteId = `note-${authorization.id}`;
  const decide = async (answer: 'approve' | 'deny') => {
    setBusy(true);
    setProblem(undefined);
    try {
      const after = await api<Authorization>('POST', `/authorizations/${encodeURIComponent(authorization.id)}/${answer}`, { body: note.trim() ? { note: note.trim() } : {} });
      setNote('');
      onDecided({ text: `${answer === 'approve' ? 'Approved' : 'Denied'}: ${formatMoney(after.amount, authorizationDenomination(after))} by ${after.agent_id} (${after.status}).` });
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) onDecided({ text: err.message, bad: true });
      else setProblem((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="decide" onSubmit={(e) => e.preventDefault()} aria-label={`Decide on ${authorization.id}`}>
      <label for={noteId}>Note (optional)</label>
      <input id={noteId} value={note} maxLength={1000} onInput={(e) => setNote(e.currentTarget.value)} />
      <div class="decide-buttons">
        <button type="button" class="primary" disabled={busy} onClick={() => decide('approve')}>
          Approve
        </button>
        <button type="button" class="danger" disabled={busy} onClick={() => decide('deny')}>
          Deny
        </button>
      </div>
      {problem && (
        <p class="field-error" role="alert">
          {problem}
        </p>
      )}
    </form>
  );
}

function AuthorizationTable({ authorizations }: { authorizations: Authorization[] }) {
  if (!authorizations.length) return <div class="state empty">Every one of these is waiting for a decision (above).</div>;
  return (
    <table class="rows-table authorization-table">
      <TableHead columns={['Endpoint', 'Agent', { label: 'Amount', num: true }, 'Status', 'Asked ↓']} />
      <tbody>
        {authorizations.map((a) => (
          <tr key={a.id} data-authorization={a.id} data-status={a.status}>
            <td class="row-main">
              <a href={href('authorizations', a.id)}>{a.endpoint}</a>
              <Reasons reasons={a.status === 'declined' || a.decision === 'declined' ? a.reasons : []} />
              {a.decided_by && (
                <div class="muted" data-decided-by>
                  {a.decision === 'declined' ? 'denied' : 'approved'} by {a.decided_by}
                  {a.decision_note ? `: ${a.decision_note}` : ''}
                </div>
              )}
            </td>
            <td data-label="Agent">
              <a href={href('agents', a.agent_id)}>{a.agent_id}</a>
            </td>
            <td class="num" data-label="Amount">
              <Money value={a.amount} denomination={authorizationDenomination(a)} />
            </td>
            <td data-label="Status">
              <AuthorizationStatus authorization={a} />
            </td>
            <td data-label="Asked">
              <Time iso={a.created_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function AuthorizationPage({ authorizationId }: { authorizationId: string }) {
  const tick = useRefreshTick();
  const [decided, setDecided] = useState(0);
  const [outcome, setOutcome] = useState<Outcome | undefined>();
  const load = useLoad((signal) => api<Authorization>('GET', `/authorizations/${encodeURIComponent(authorizationId)}`, { signal }), [authorizationId, decided], tick);
  return (
    <>
      <p class="crumbs">
        <a href={href('authorizations')}>Authorizations</a> /
      </p>
      <OutcomeMessage outcome={outcome} />
      <Panel id="authorization" title="Authorization" load={load}>
        {(a) => <AuthorizationDetails authorization={a} onDecided={(what) => (setOutcome(what), setDecided((n) => n + 1))} />}
      </Panel>
    </>
  );
}

function AuthorizationDetails({ authorization: a, onDecided }: { authorization: Authorization; onDecided: (outcome: Outcome) => void }) {
  const denomination = authorizationDenomination(a);
  const rows: [string, ComponentChildren, string?][] = [
    ['Agent', <a href={href('agents', a.agent_id)}>{a.agent_id}</a>],
    ['Amount, exact', `${exactAmount(a.amount)}${a.asset ? ` ${a.asset}` : ''}`, 'amount'],
    ['Decision', a.decision, 'decision'],
    ['Endpoint', a.endpoint],
    ['Network', a.network ? <Network id={a.network} /> : '–'],
    ['Payee', a.payee_address ?? '–'],
    ['Asked', <Time iso={a.created_at} absolute />],
  ];
  if (a.pending_until) rows.push([a.status === 'pending' ? 'Waits until' : 'Waited until', <Time iso={a.pending_until} absolute />]);
  if (a.decided_at) {
    // A person's answer names its key; else the policies decided at once, or the wait ran out.
    const by = a.decided_by ?? (a.pending_until ? 'no one: the wait ended' : 'the policies');
    rows.push(['Decided', <Time iso={a.decided_at} absolute />], ['By', by, 'decided_by']);
    if (a.decision_note) rows.push(['Note', a.decision_note, 'decision_note']);
  }
  if (a.decision !== 'declined') rows.push(['Hold expires', <Time iso={a.expires_at} absolute />]);
  if (a.captured_at) {
    rows.push(
      ['Captured', <Time iso={a.captured_at} absolute />],
      ['Captured amount', <Money value={a.captured_amount} denomination={denomination} />],
      ['Captured by', a.captured_by ? <a href={href('records', a.captured_by)}>{a.captured_by}</a> : '–'],
    );
  }
  if (a.voided_at) rows.push(['Voided', <Time iso={a.voided_at} absolute />]);
  if (a.idempotency_key) rows.push(['Idempotency key', a.idempotency_key]);
  return (
    <div class="authorization-details">
      <h2 class="alert-title">
        <AuthorizationStatus authorization={a} /> <Money value={a.amount} denomination={denomination} /> by {a.agent_id}
      </h2>
      <Reasons reasons={a.reasons} />
      <dl class="facts">
        {rows.map(([name, value, field]) => (
          <div key={name} data-field={field}>
            <dt>{name}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
      <Decide authorization={a} onDecided={onDecided} />
      <h3>Checks at the decision</h3>
      {a.checks.length ? <Checks checks={a.checks} /> : <p class="muted">No limit of an active policy applied to this payment.</p>}
    </div>
  );
}

/** Each limit that applied, as it stood: amounts in the team's assets (limits add every asset), calls as counts. */
function Checks({ checks }: { checks: AuthorizationCheck[] }) {
  const team = useTeamAssets();
  const figure = (check: AuthorizationCheck, value: string) => (isCallKind(check.kind) ? formatCalls(value) : <Money value={value} denomination={team} />);
  return (
    <table class="rows-table check-table">
      <TableHead columns={['Policy', 'Kind', 'Window', { label: 'Limit', num: true }, { label: 'Spent', num: true }, { label: 'Held', num: true }, { label: 'Remaining', num: true }, 'Breaks']} />
      <tbody>
        {checks.map((c, i) => (
          <tr key={i} data-check={c.policy_id} data-breaks={c.breaks ? '' : undefined}>
            <td class="row-main">
              <a href={href('policies', c.policy_id)}>{c.policy_name}</a> <span class="badge">{c.action}</span>
            </td>
            <td data-label="Kind">{KIND_WORDS[c.kind] ?? c.kind}</td>
            <td data-label="Window">{c.window ? <TimeWindow start={c.window.start} end={c.window.end} /> : <span class="muted">this payment</span>}</td>
            <td class="num" data-label="Limit">
              {figure(c, c.limit)}
            </td>
            <td class="num" data-label="Spent">
              {figure(c, c.spent)}
            </td>
            <td class="num" data-label="Held">
              {figure(c, c.held)}
            </td>
            <td class="num" data-label="Remaining">
              {figure(c, c.remaining)}
            </td>
            <td data-label="Breaks">{c.breaks ? <strong class="budget-reached">yes</strong> : 'no'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
