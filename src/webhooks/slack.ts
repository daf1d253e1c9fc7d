import BigNumber from 'bignumber.js';
import type { WebhookEvent } from './outbox.js';

/** Slack's mrkdwn needs &, < and > escaped; everything else is shown as sent. */
const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const HEADLINES: Record<string, string> = {
  'alert.opened': ':rotating_light: Alert opened',
  'alert.escalated': ':arrow_double_up: Alert escalated',
  'alert.resolved': ':white_check_mark: Alert resolved',
  'alert.reopened': ':leftwards_arrow_with_hook: Alert reopened',
  'authorization.pending': ':raising_hand: Approval needed',
  'authorization.decided': ':ballot_box_with_check: Authorization decided',
  test: ':wave: Test event from spendscope',
};

interface AlertData {
  id?: string;
  type?: string;
  kind?: string;
  severity?: string;
  agentId?: string;
  policyId?: string | null;
  observed?: string | null;
  limit?: string | null;
  subject?: string | null;
  message?: string;
}

/** "spent 150.25 against a limit of 100 (50.25 over)", exact: decimal strings through bignumber.js, never a float. */
function overBy(observed: string, limit: string): string | undefined {
  const o = new BigNumber(observed);
  const l = new BigNumber(limit);
  if (!o.isFinite() || !l.isFinite()) return undefined;
  return `spent ${o.toFixed()} against a limit of ${l.toFixed()} (${o.minus(l).toFixed()} over)`;
}

/**
 * A Slack incoming-webhook message for an event: `text` (the notification and fallback) and
 * `blocks` (a section and a context line), as Slack documents the payload. It says which agent
 * broke which limit by how much, exactly, and links to the alert in the API.
 */
export function slackMessage(event: WebhookEvent, publicUrl: string): { text: string; blocks: unknown[] } {
  if (event.type === 'authorization.pending' || event.type === 'authorization.decided') return authorizationMessage(event, publicUrl);
  const alert = event.data as AlertData;
  const headline = HEADLINES[event.type] ?? event.type;
  if (event.type === 'test' || !alert.id) {
    const text = `${headline}: this endpoint receives spendscope alerts.`;
    return { text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text: escape(text) } }] };
  }
  const who = alert.agentId ? `Agent *${escape(alert.agentId)}*` : 'spendscope';
  const what =
    alert.type === 'violation' && alert.observed && alert.limit
      ? `broke the ${escape(alert.kind ?? '')} limit${alert.policyId ? ` of policy ${escape(alert.policyId)}` : ''}: ${escape(overBy(alert.observed, alert.limit) ?? `${alert.observed} against ${alert.limit}`)}`
      : escape(alert.message ?? '');
  const link = `${publicUrl.replace(/\/$/, '')}/api/v1/alerts/${encodeURIComponent(alert.id)}`;
  const line = `${headline} (${escape(alert.severity ?? '')}): ${who} ${what}`;
  return {
    text: line,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: line } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: `${escape(alert.message ?? '')} · <${link}|${escape(alert.id)}>` }] },
    ],
  };
}

interface AuthorizationData {
  id: string;
  decision: string;
  status: string;
  agent_id: string;
  endpoint: string;
  amount: string;
  asset: string | null;
  payee_address: string | null;
  reasons: string[];
  pending_until: string | null;
  decided_by: string | null;
  decision_note: string | null;
}

/**
 * An approval asked for, or its outcome: the agent, the amount and asset, the payee and endpoint,
 * the limits it would break (its reasons), and a link to the authorization in the dashboard, where
 * a person with the approve scope decides it.
 */
function authorizationMessage(event: WebhookEvent, publicUrl: string): { text: string; blocks: unknown[] } {
  const a = event.data as unknown as AuthorizationData;
  const headline = HEADLINES[event.type]!;
  const money = `${a.amount}${a.asset ? ` ${a.asset}` : ''}`;
  const payee = a.payee_address ? ` to ${a.payee_address}` : '';
  const link = `${publicUrl.replace(/\/$/, '')}/dashboard/authorizations/${encodeURIComponent(a.id)}`;
  const line =
    event.type === 'authorization.pending'
      ? `${headline}: Agent *${escape(a.agent_id)}* asks to pay *${escape(money)}*${escape(payee)} (${escape(a.endpoint)})`
      : `${headline}: the payment of *${escape(money)}*${escape(payee)} by agent *${escape(a.agent_id)}* is *${escape(a.decision)}*${a.decided_by ? ` by ${escape(a.decided_by)}` : ''}`;
  const details = event.type === 'authorization.pending' ? [...a.reasons, ...(a.pending_until ? [`Decide by ${a.pending_until}`] : [])] : a.reasons;
  return {
    text: line,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: line } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: `${escape(details.join(' · '))} · <${link}|${escape(a.id)}>` }] },
    ],
  };
}
