import BigNumber from 'bignumber.js';
import type { WebhookEvent } from './outbox.js';

/** Slack's mrkdwn needs &, < and > escaped; everything else is shown as sent. */
const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const HEADLINES: Record<string, string> = {
  'alert.opened': ':rotating_light: Alert opened',
  'alert.escalated': ':arrow_double_up: Alert escalated',
  'alert.resolved': ':white_check_mark: Alert resolved',
  'alert.reopened': ':leftwards_arrow_with_hook: Alert reopened',
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
