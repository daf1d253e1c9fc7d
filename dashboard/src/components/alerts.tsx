/**
 * Alerts as rows a person can scan: severity, a short title, agent, policy, what was observed
 * against what limit, the window, how often, and when it was raised (the order of the list:
 * GET /alerts sorts by when an alert was raised, newest first). The long explanation is on the
 * alert's own page.
 */
import { useTeamAssets } from '../assets';
import { formatCount } from '../format';
import { KIND_WORDS } from '../limits';
import { UNKNOWN, type Denomination } from '../money';
import { href } from '../router';
import type { Alert, LimitKind } from '../types';
import { Money } from './money';
import { Time, TimeWindow } from './time';

export function Severity({ severity }: { severity: Alert['severity'] }) {
  return <span class={`badge severity-${severity}`}>{severity}</span>;
}

const TITLES: Record<string, string> = {
  per_call: 'Payment over the per-payment limit',
  per_hour: 'Hourly limit broken',
  daily: 'Daily limit broken',
  weekly: 'Weekly limit broken',
  monthly: 'Monthly limit broken',
  total: 'Total limit broken',
  per_endpoint: 'Daily endpoint limit broken',
  calls_per_minute: 'Calls per minute limit broken',
  calls_per_hour: 'Calls per hour limit broken',
  calls_per_day: 'Calls per day limit broken',
  suspended: 'Payment by a suspended agent',
  not_allowed: 'Payment outside the allowlist',
  client_blocked: 'Payment blocked by the client',
  client_flagged: 'Payment flagged by the client',
  spike: 'Spending spike',
  new_payee: 'Payment to a new payee',
  loop: 'Possible runaway loop',
  webhook_disabled: 'Webhook endpoint disabled',
  alert_storm: 'Too many alerts at once',
  // Settlement alerts: a record against the chain (docs/reconciliation.md).
  mismatch: 'Record does not match its transaction',
  failed: 'Record claims a reverted transaction',
  not_found: 'Record claims a transaction the chain lacks',
  unreported: 'Payment no record claims',
};

/** A few words for the alert: what happened, without its figures (those have their own columns). */
export function alertTitle(alert: Alert): string {
  // A threshold is a warning on the way to a limit, not a breach; its percentage is a figure.
  // An approval is a question to a person, not a breach: which limit is in its own column.
  if (alert.type === 'approval') return 'Payment waiting for approval';
  if (alert.type === 'threshold') return `${capitalised(KIND_WORDS[alert.kind as LimitKind] ?? alert.kind.replace(/_/g, ' '))} limit: alert threshold reached`;
  const title = TITLES[alert.kind] ?? alert.kind.replace(/_/g, ' ');
  return alert.details.declined === true ? `Authorization declined: ${title[0]!.toLowerCase()}${title.slice(1)}` : title;
}

const capitalised = (text: string) => text[0]!.toUpperCase() + text.slice(1);

/** Kinds whose observed value and limit are counts (calls, alerts), not amounts. */
const COUNT_KINDS = new Set(['loop', 'alert_storm', 'calls_per_minute', 'calls_per_hour', 'calls_per_day']);
/** Of those, the ones that count calls. */
export const CALL_COUNT_KINDS = new Set(['loop', 'calls_per_minute', 'calls_per_hour', 'calls_per_day']);
/** Kinds whose observed value is one payment, not a sum over a window. */
const ONE_PAYMENT_KINDS = new Set(['per_call', 'client_blocked', 'client_flagged', 'spike', 'new_payee']);

/**
 * What an alert's amounts are in. Alerts carry no asset: limits compare sums of every asset, so a
 * window's spend is in the team's assets (mixed, said so, when there are several); one payment
 * is in one asset, known only when the team has only one.
 */
export function alertDenomination(alert: Alert, team: Denomination): Denomination {
  if (ONE_PAYMENT_KINDS.has(alert.kind) && team.kind !== 'asset') return UNKNOWN;
  return team;
}

/** Observed against limit: "12.60 USDC of 10.00 USDC", "412 calls of 300", or the observed alone. */
export function ObservedAgainstLimit({ alert }: { alert: Alert }) {
  const team = useTeamAssets();
  if (alert.observed === null) return <span class="muted">–</span>;
  if (COUNT_KINDS.has(alert.kind)) {
    return (
      <span>
        {alert.observed}
        {alert.limit !== null && <span class="muted"> of {alert.limit}</span>}
        {CALL_COUNT_KINDS.has(alert.kind) ? ' calls' : ''}
      </span>
    );
  }
  const denomination = alertDenomination(alert, team);
  return (
    <span>
      <Money value={alert.observed} denomination={denomination} />
      {alert.limit !== null && (
        <span class="muted">
          {' '}
          {alert.kind === 'spike' ? 'over' : 'of'} <Money value={alert.limit} denomination={denomination} />
        </span>
      )}
    </span>
  );
}

/** The policy an alert broke, by name (as the alert recorded it), else what it is about. */
function AlertPolicy({ alert }: { alert: Alert }) {
  if (alert.policyId) return <a href={href('policies', alert.policyId)}>{String(alert.details.policyName ?? alert.policyId)}</a>;
  if (alert.type === 'anomaly') return <span class="muted">anomaly rule</span>;
  if (alert.kind.startsWith('client_')) return <span class="muted">{alert.details.clientPolicyId ? `client’s ${String(alert.details.clientPolicyId)}` : 'client’s own'}</span>;
  return <span class="muted">–</span>;
}

export function AlertTable({ alerts, more, hideAgent }: { alerts: Alert[]; more?: string; hideAgent?: boolean }) {
  return (
    <>
      <table class="alert-table rows-table">
        <thead>
          <tr>
            <th scope="col">Alert</th>
            {!hideAgent && <th scope="col">Agent</th>}
            <th scope="col">Policy</th>
            <th scope="col" class="num">
              Observed
            </th>
            <th scope="col">Window</th>
            <th scope="col" class="num">
              Times
            </th>
            <th scope="col" aria-sort="descending">
              Raised ↓
            </th>
          </tr>
        </thead>
        <tbody>
          {alerts.map((a) => (
            <tr key={a.id} data-alert={a.id} data-status={a.status}>
              <td class="row-main">
                <Severity severity={a.severity} /> <a href={href('alerts', a.id)}>{alertTitle(a)}</a>
                {a.status === 'resolved' && (
                  <>
                    {' '}
                    <span class="badge status-resolved">resolved</span>
                  </>
                )}
              </td>
              {!hideAgent && (
                <td data-label="Agent">{a.agentId ? <a href={href('agents', a.agentId)}>{a.agentId}</a> : <span class="muted">–</span>}</td>
              )}
              <td data-label="Policy">
                <AlertPolicy alert={a} />
              </td>
              <td class="num" data-label="Observed">
                <ObservedAgainstLimit alert={a} />
              </td>
              <td data-label="Window">{a.window ? <TimeWindow start={a.window.start} end={a.window.end} /> : <span class="muted">–</span>}</td>
              <td class="num" data-label="Times">
                {formatCount(a.count)}
              </td>
              <td data-label="Raised">
                <Time iso={a.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {more && (
        <p>
          <a href={more}>All of them</a>
        </p>
      )}
    </>
  );
}
