/**
 * Policies: the list (activate or deactivate in place, delete after a confirmation, each with its
 * use of the current windows), and a form to create or edit one. The form checks nothing the API
 * checks: it sends what was typed and shows each of the API's field errors next to its field, so
 * the rules live in one place.
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { useChangeRight } from '../access';
import { useTeamAssets } from '../assets';
import { ChangeButton, ReadOnlyNote } from '../components/change-controls';
import { Money } from '../components/money';
import { Time } from '../components/time';
import { FieldMessage, FormError, invalidProps, OutcomeMessage, useOutcome, useSubmit } from '../components/form';
import { PagedList } from '../components/list';
import { Panel, useLoad } from '../components/panel';
import { useRefreshTick } from '../components/range-bar';
import { formatCalls, isCallKind, KIND_LABELS, policyDenomination } from '../limits';
import { href, navigate, useLocation } from '../router';
import type { BudgetList, LimitKind, Policy, PolicyMatch } from '../types';
import { CurrentUse } from './budgets';

/**
 * What each action does, worded as src/evaluation does it: a block policy declines only
 * authorizations asked for before paying (POST /authorizations); records of payments already made
 * are stored and counted whatever they break.
 */
const ACTIONS: Record<Policy['action'], { badge: string; label: string; effect: string }> = {
  flag: {
    badge: 'flag',
    label: 'Flag',
    effect: 'Raises a warning alert when a limit is broken. Payments go on; an authorization asked for is approved, with the limit it breaks among its reasons.',
  },
  block: {
    badge: 'block',
    label: 'Block',
    effect:
      'An authorization asked for before paying (POST /authorizations) that would break a limit is declined, and a critical alert is raised. Records of payments already made are never refused: one that breaks a limit is stored, counted and raises the critical alert.',
  },
  approve: {
    badge: 'approve',
    label: 'Ask a person',
    effect:
      'An authorization that would break a limit waits for a person (pending, its amount held) until someone with the approve scope approves or denies it on the Authorizations page, or the wait ends (then it is declined). A record of a payment nobody approved that breaks a limit raises a critical alert.',
  },
};

const ALLOW_FIELDS = ['payees', 'networks', 'assets', 'endpoints'] as const;
type AllowField = (typeof ALLOW_FIELDS)[number];

const ALLOW_LABELS: Record<AllowField, string> = {
  payees: 'Payees allowed (addresses; EVM addresses compared without case)',
  networks: 'Networks allowed (CAIP-2 ids or x402 network ids such as base)',
  assets: 'Assets allowed (symbols or token addresses)',
  endpoints: 'Endpoints allowed (a host, *.host, or a URL prefix)',
};

/** A policy's allowlist in a few words: "allows only payees 0xab…; networks eip155:8453". */
function allowText(allow: Policy['allow']): string {
  if (!allow) return '';
  const parts = ALLOW_FIELDS.filter((f) => allow[f]?.length).map((f) => `${f} ${allow[f]!.join(', ')}`);
  return parts.length ? `allows only ${parts.join('; ')}` : '';
}

const SCOPES: Record<Policy['scope'], { label: string; effect: string }> = {
  agent: { label: 'Per agent', effect: 'Each agent has its own totals: each may spend up to every limit on its own.' },
  pool: { label: 'Pool', effect: 'The agents listed (none: the whole team) share one total per limit, spent by any of them.' },
};

const MATCH_FIELDS = ['categories', 'networks', 'assets', 'endpoints', 'tags'] as const;
type MatchField = (typeof MATCH_FIELDS)[number];

const MATCH_LABELS: Record<MatchField, string> = {
  categories: 'Categories (llm, api, data, search, compute, storage, media, or your own)',
  networks: 'Networks (CAIP-2 ids such as eip155:8453, or x402 network ids such as base)',
  assets: 'Assets (symbols such as USDC, or token addresses)',
  endpoints: 'Endpoints (a host, *.host, or a URL prefix)',
  tags: 'Tags (records carrying any of them)',
};

/** A policy's match in a few words: "only assets usdc; categories llm". */
function matchText(match: PolicyMatch | null): string {
  if (!match) return '';
  const parts = MATCH_FIELDS.filter((f) => match[f]?.length).map((f) => `${f} ${match[f]!.join(', ')}`);
  return parts.length ? `only ${parts.join('; ')}` : '';
}

/** "15 min", "2 h", "45 s": how long a person has to decide. */
function formatWait(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

export function Policies() {
  const tick = useRefreshTick();
  const saved = new URLSearchParams(useLocation().search).get('saved');
  const [changed, setChanged] = useState(0);
  const [outcome, act] = useOutcome(() => setChanged((n) => n + 1));
  const right = useChangeRight();
  // Limits compare sums of every asset's amounts: in the team's assets (mixed, said so, if several),
  // unless a policy keeps to some assets.
  const assets = useTeamAssets();
  // One answer for every policy's use of its current windows; without it the list still shows.
  const budgets = useLoad((signal) => api<BudgetList>('GET', '/budgets', { signal }), [changed], tick);
  return (
    <>
      <div class="page-head">
        <h1>Policies</h1>
        {right.allowed ? (
          <a class="button primary" href={href('policies', 'new')}>
            New policy
          </a>
        ) : (
          <ChangeButton class="primary">New policy</ChangeButton>
        )}
      </div>
      <ReadOnlyNote />
      {saved && (
        <p class="notice" role="status">
          Saved the policy “{saved}”.
        </p>
      )}
      <OutcomeMessage outcome={outcome} />
      <PagedList<Policy> id="policies-list" title="Budget policies, newest first" path="/policies" query={{}} version={changed} tick={tick} empty="No policies yet.">
        {(policies) => (
          <ul class="policy-list">
            {policies.map((p) => (
              <li key={p.id} data-policy={p.id}>
                <div class="policy-main">
                  <a href={href('policies', p.id)}>{p.name}</a> <span class={`badge status-${p.active ? 'active' : 'inactive'}`}>{p.active ? 'active' : 'inactive'}</span>{' '}
                  <span class={`badge action-${p.action}`} title={ACTIONS[p.action].effect}>
                    {ACTIONS[p.action].badge}
                  </span>
                  {p.scope === 'pool' && (
                    <>
                      {' '}
                      <span class="badge scope-pool" title={SCOPES.pool.effect}>
                        pool
                      </span>
                    </>
                  )}
                  <div class="muted">
                    {p.agents.length ? p.agents.join(', ') : 'every agent'}
                    {p.limits.map((l, i) => (
                      <span key={i} class="limit">
                        {' · '}
                        {KIND_LABELS[l.kind]}
                        {l.endpoint ? ` (${l.endpoint})` : ''}: {l.count !== undefined ? formatCalls(l.count) : <Money value={l.amount} denomination={policyDenomination(p.match, assets, p.currency)} />}
                      </span>
                    ))}
                    {p.match && <span class="policy-match"> · {matchText(p.match)}</span>}
                    {p.notify_at.length > 0 && <span class="policy-notify"> · alerts at {p.notify_at.map((n) => `${n}%`).join(', ')}</span>}
                    {p.allow && <span class="policy-allow"> · {allowText(p.allow)}</span>}
                    {p.action === 'approve' && <span class="policy-wait"> · a person has {formatWait(p.approval_timeout_s)} to decide</span>}
                  </div>
                  {p.active && <CurrentUse policyId={p.id} budgets={budgets.data?.data} />}
                </div>
                <div class="policy-actions">
                  <ChangeButton onClick={() => act(() => api('PATCH', `/policies/${p.id}`, { body: { active: !p.active } }))}>{p.active ? 'Deactivate' : 'Activate'}</ChangeButton>
                  <ChangeButton
                    class="danger"
                    onClick={() => window.confirm(`Delete the policy "${p.name}"? This cannot be undone.`) && act(() => api('DELETE', `/policies/${p.id}`))}
                  >
                    Delete
                  </ChangeButton>
                </div>
              </li>
            ))}
          </ul>
        )}
      </PagedList>
      <p class="muted actions-legend">
        <strong>Flag</strong>: {ACTIONS.flag.effect} <strong>Block</strong>: {ACTIONS.block.effect}
      </p>
    </>
  );
}

/** A policy's page: the form, filled in. `new` is an empty form. */
export function PolicyPage({ policyId }: { policyId: string }) {
  const load = useLoad((signal) => (policyId === 'new' ? Promise.resolve(undefined) : api<Policy>('GET', `/policies/${encodeURIComponent(policyId)}`, { signal })), [policyId]);
  return (
    <>
      <p class="crumbs">
        <a href={href('policies')}>Policies</a> /
      </p>
      <Panel id="policy" title={policyId === 'new' ? 'New policy' : 'Edit policy'} load={load}>
        {(policy) => <PolicyForm policy={policy} />}
      </Panel>
    </>
  );
}

interface LimitDraft {
  kind: LimitKind;
  amount: string;
  count: string;
  endpoint: string;
}

/** A comma-separated input as the list it stands for. */
const listOf = (text: string) =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

/**
 * A typed number sent as a number, as the API's integer fields take it; anything else as typed,
 * so the API's own message says what is wrong with it.
 */
function numberOrText(text: string): number | string {
  const value = Number(text);
  return text !== '' && Number.isFinite(value) ? value : text;
}

function limitBody(l: LimitDraft): Record<string, unknown> {
  if (isCallKind(l.kind)) {
    const count = l.count.trim();
    // Nothing typed: sent without a count, for the API to say it is required.
    return count === '' ? { kind: l.kind } : { kind: l.kind, count: numberOrText(count) };
  }
  return l.kind === 'per_endpoint' ? { kind: l.kind, amount: l.amount.trim(), endpoint: l.endpoint.trim() } : { kind: l.kind, amount: l.amount.trim() };
}

const limitDraft = (l: Policy['limits'][number]): LimitDraft => ({ kind: l.kind, amount: l.amount ?? '', count: l.count === undefined ? '' : String(l.count), endpoint: l.endpoint ?? '' });

/** The lists of a policy's `match` or `allow`, one input each (values separated by commas), with the API's errors at each. */
function ListInputs<F extends string>(props: {
  name: 'match' | 'allow';
  fields: readonly F[];
  labels: Record<F, string>;
  values: Record<F, string>;
  set: (change: (values: Record<F, string>) => Record<F, string>) => void;
  error: Parameters<typeof FieldMessage>[0]['error'];
}) {
  const { name, fields, labels, values, set, error } = props;
  return (
    <>
      <FieldMessage error={error} field={name} exact />
      {fields.map((f) => (
        <div key={f} class="stack">
          <label for={`policy-${name}-${f}`}>{labels[f]}</label>
          <input id={`policy-${name}-${f}`} name={`${name}.${f}`} value={values[f]} onInput={(e) => set((m) => ({ ...m, [f]: e.currentTarget.value }))} {...invalidProps(error, `${name}.${f}`)} />
          <FieldMessage error={error} field={`${name}.${f}`} />
        </div>
      ))}
    </>
  );
}

function PolicyForm({ policy }: { policy?: Policy }) {
  const right = useChangeRight();
  const [name, setName] = useState(policy?.name ?? '');
  const [agents, setAgents] = useState(policy?.agents.join(', ') ?? '');
  const [scope, setScope] = useState<Policy['scope']>(policy?.scope ?? 'agent');
  const [limits, setLimits] = useState<LimitDraft[]>(policy?.limits.map(limitDraft) ?? [{ kind: 'daily', amount: '', count: '', endpoint: '' }]);
  const [action, setAction] = useState<Policy['action']>(policy?.action ?? 'flag');
  const [active, setActive] = useState(policy?.active ?? true);
  const [timezone, setTimezone] = useState(policy?.timezone ?? '');
  const [match, setMatch] = useState<Record<MatchField, string>>(() => Object.fromEntries(MATCH_FIELDS.map((f) => [f, policy?.match?.[f]?.join(', ') ?? ''])) as Record<MatchField, string>);
  const [notifyAt, setNotifyAt] = useState(policy?.notify_at.join(', ') ?? '');
  const [startsAt, setStartsAt] = useState(policy?.starts_at ?? '');
  const [allow, setAllow] = useState<Record<AllowField, string>>(() => Object.fromEntries(ALLOW_FIELDS.map((f) => [f, policy?.allow?.[f]?.join(', ') ?? ''])) as Record<AllowField, string>);
  const [timeout, setTimeoutS] = useState(policy ? String(policy.approval_timeout_s) : '900');
  const setLimit = (i: number, change: Partial<LimitDraft>) => setLimits((ls) => ls.map((l, j) => (j === i ? { ...l, ...change } : l)));
  const hasTotal = limits.some((l) => l.kind === 'total');

  const [error, submit, busy] = useSubmit(async () => {
    const body: Record<string, unknown> = {
      name,
      agents: agents
        .split(/[\s,]+/)
        .map((a) => a.trim())
        .filter(Boolean),
      scope,
      limits: limits.map(limitBody),
      action,
      active,
      timezone: timezone.trim() || null,
    };
    const lists = Object.fromEntries(MATCH_FIELDS.map((f) => [f, listOf(match[f])]).filter(([, items]) => items!.length > 0));
    // Only the lists typed are sent; an edit that empties them all removes the policy's match.
    if (Object.keys(lists).length > 0) body.match = lists;
    else if (policy?.match) body.match = null;
    // "80%" reads as 80: the sign is how people write a percentage, not part of the number.
    const thresholds = listOf(notifyAt).map((p) => numberOrText(p.replace(/%$/, '').trim()));
    if (thresholds.length > 0 || (policy && policy.notify_at.length > 0)) body.notify_at = thresholds;
    const allowed = Object.fromEntries(ALLOW_FIELDS.map((f) => [f, listOf(allow[f])]).filter(([, items]) => items!.length > 0));
    if (Object.keys(allowed).length > 0) body.allow = allowed;
    else if (policy?.allow) body.allow = null;
    if (action === 'approve') body.approval_timeout_s = numberOrText(timeout.trim());
    if (hasTotal) {
      if (startsAt.trim()) body.starts_at = startsAt.trim();
      else if (policy) body.starts_at = null;
    }
    const saved = policy ? await api<Policy>('PATCH', `/policies/${policy.id}`, { body }) : await api<Policy>('POST', '/policies', { body });
    navigate(`${href('policies')}?saved=${encodeURIComponent(saved.name)}`);
  });

  return (
    <form class="policy-form stack" onSubmit={submit} noValidate>
      <ReadOnlyNote />
      {/* A key that may not change policies reads the form, every field disabled. */}
      <fieldset class="plain stack" disabled={!right.allowed}>
      <FormError error={error} summary="Please correct the fields marked below." />
      <label for="policy-name">Name</label>
      <input id="policy-name" value={name} onInput={(e) => setName(e.currentTarget.value)} {...invalidProps(error, 'name')} />
      <FieldMessage error={error} field="name" />

      <label for="policy-agents">Agents (ids, separated by commas; empty: every agent of the team)</label>
      <input id="policy-agents" value={agents} onInput={(e) => setAgents(e.currentTarget.value)} {...invalidProps(error, 'agents')} />
      <FieldMessage error={error} field="agents" />

      <fieldset>
        <legend>Whose totals</legend>
        {(['agent', 'pool'] as const).map((s) => (
          <label key={s} class="action-choice">
            <input type="radio" name="scope" value={s} checked={scope === s} onChange={() => setScope(s)} aria-describedby={`scope-${s}-effect`} />
            <strong>{SCOPES[s].label}</strong>
            <span class="muted" id={`scope-${s}-effect`}>
              {SCOPES[s].effect}
            </span>
          </label>
        ))}
        <FieldMessage error={error} field="scope" />
      </fieldset>

      <fieldset>
        <legend>Limits</legend>
        <FieldMessage error={error} field="limits" exact />
        {limits.map((limit, i) => (
          <div class="limit-row" key={i}>
            <label>
              Kind{' '}
              <select name={`limits[${i}].kind`} value={limit.kind} onChange={(e) => setLimit(i, { kind: e.currentTarget.value as LimitKind })}>
                {(Object.keys(KIND_LABELS) as LimitKind[]).map((k) => (
                  <option key={k} value={k}>
                    {KIND_LABELS[k]}
                  </option>
                ))}
              </select>
            </label>
            {isCallKind(limit.kind) ? (
              <label>
                Count{' '}
                <input inputMode="numeric" name={`limits[${i}].count`} value={limit.count} onInput={(e) => setLimit(i, { count: e.currentTarget.value })} {...invalidProps(error, `limits[${i}].count`)} />
              </label>
            ) : (
              <label>
                Amount{' '}
                <input inputMode="decimal" name={`limits[${i}].amount`} value={limit.amount} onInput={(e) => setLimit(i, { amount: e.currentTarget.value })} {...invalidProps(error, `limits[${i}].amount`)} />
              </label>
            )}
            {limit.kind === 'per_endpoint' && (
              <label>
                Endpoint{' '}
                <input placeholder="api.example.com" name={`limits[${i}].endpoint`} value={limit.endpoint} onInput={(e) => setLimit(i, { endpoint: e.currentTarget.value })} {...invalidProps(error, `limits[${i}].endpoint`)} />
              </label>
            )}
            {limits.length > 1 && (
              <button type="button" onClick={() => setLimits((ls) => ls.filter((_, j) => j !== i))} aria-label={`Remove limit ${i + 1}`}>
                Remove
              </button>
            )}
            <FieldMessage error={error} field={`limits[${i}]`} exact />
            <FieldMessage error={error} field={`limits[${i}].amount`} />
            <FieldMessage error={error} field={`limits[${i}].count`} />
            <FieldMessage error={error} field={`limits[${i}].endpoint`} />
            <FieldMessage error={error} field={`limits[${i}].kind`} />
          </div>
        ))}
        <button type="button" onClick={() => setLimits((ls) => [...ls, { kind: 'per_call', amount: '', count: '', endpoint: '' }])}>
          Add a limit
        </button>
      </fieldset>

      {hasTotal && (
        <>
          <label for="policy-starts-at">Start of the total limits (an ISO 8601 instant on a whole minute, such as 2026-12-01T00:00:00Z; empty: when the policy is created)</label>
          <input id="policy-starts-at" name="starts_at" value={startsAt} onInput={(e) => setStartsAt(e.currentTarget.value)} {...invalidProps(error, 'starts_at')} />
          <FieldMessage error={error} field="starts_at" />
          {policy && (
            <p class="muted">
              Its total limits count from <Time iso={policy.starts_at} absolute />.
            </p>
          )}
        </>
      )}

      <fieldset>
        <legend>Only records matching (optional; separated by commas)</legend>
        <p class="muted form-hint">
          Each list given narrows the policy: a record counts toward its limits when it matches one entry of every list given. Limits are in the team's currency, each
          payment counted at its value whatever its asset; with exactly one asset, they are amounts of that asset.
        </p>
        <ListInputs name="match" fields={MATCH_FIELDS} labels={MATCH_LABELS} values={match} set={setMatch} error={error} />
      </fieldset>

      <fieldset>
        <legend>Allow only (optional; separated by commas)</legend>
        <p class="muted form-hint">
          Deny by default: a payment of its agents outside any list given breaks the policy (declined under Block, sent to a person under Ask a person, an alert under
          Flag). A payment that does not say its payee is outside a payee list. With an allowlist, the policy may have no limits.
        </p>
        <ListInputs name="allow" fields={ALLOW_FIELDS} labels={ALLOW_LABELS} values={allow} set={setAllow} error={error} />
      </fieldset>

      <label for="policy-notify-at">Alert at (percentages of each windowed limit, separated by commas, such as 80, 95; empty: none)</label>
      <input id="policy-notify-at" name="notify_at" value={notifyAt} onInput={(e) => setNotifyAt(e.currentTarget.value)} {...invalidProps(error, 'notify_at')} />
      <FieldMessage error={error} field="notify_at" />

      <fieldset>
        <legend>When a limit is broken</legend>
        {(['flag', 'block', 'approve'] as const).map((a) => (
          <label key={a} class="action-choice">
            <input type="radio" name="action" checked={action === a} onChange={() => setAction(a)} aria-describedby={`action-${a}-effect`} />
            <strong>{ACTIONS[a].label}</strong>
            <span class="muted" id={`action-${a}-effect`}>
              {ACTIONS[a].effect}
            </span>
          </label>
        ))}
      </fieldset>

      {action === 'approve' && (
        <>
          <label for="policy-approval-timeout">Time a person has to decide, in seconds (1 to 86,400; undecided then: declined)</label>
          <input id="policy-approval-timeout" inputMode="numeric" name="approval_timeout_s" value={timeout} onInput={(e) => setTimeoutS(e.currentTarget.value)} {...invalidProps(error, 'approval_timeout_s')} />
          <FieldMessage error={error} field="approval_timeout_s" />
        </>
      )}

      <label for="policy-timezone">Time zone of the daily, weekly and monthly windows and of calls per day (IANA, e.g. Europe/Lisbon; empty: UTC)</label>
      <input id="policy-timezone" value={timezone} onInput={(e) => setTimezone(e.currentTarget.value)} {...invalidProps(error, 'timezone')} />
      <FieldMessage error={error} field="timezone" />

      <label class="check">
        <input type="checkbox" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} /> Active
      </label>
      {policy && (
        <p class="muted">
          Created <Time iso={policy.createdAt} />, changed <Time iso={policy.updatedAt} />.
        </p>
      )}
      </fieldset>
      <div>
        <ChangeButton type="submit" disabled={busy}>
          {policy ? 'Save' : 'Create policy'}
        </ChangeButton>
      </div>
    </form>
  );
}
