import { formatAgo } from '../format';
import { href } from '../router';
import type { Alert } from '../types';

export function Severity({ severity }: { severity: Alert['severity'] }) {
  return <span class={`badge severity-${severity}`}>{severity}</span>;
}

export function AlertList({ alerts, more }: { alerts: Alert[]; more?: string }) {
  return (
    <>
      <ul class="alert-list">
        {alerts.map((a) => (
          <li key={a.id} data-alert={a.id}>
            <Severity severity={a.severity} />
            <a href={href('alerts', a.id)}>{a.message}</a>
            <span class="muted">
              {a.agentId} · {a.count > 1 ? `${a.count} times, ` : ''}last {formatAgo(a.lastSeen)}
              {a.status === 'resolved' ? ' · resolved' : ''}
            </span>
          </li>
        ))}
      </ul>
      {more && (
        <p>
          <a href={more}>All of them</a>
        </p>
      )}
    </>
  );
}
