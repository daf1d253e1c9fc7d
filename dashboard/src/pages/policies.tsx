/**
 * Policies: the list (activate or deactivate in place, delete after a confirmation), and a form to
 * create or edit one. The form checks nothing the API checks: it sends what was typed and shows
 * each of the API's field errors next to its field, so the rules live in one place.
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
import { href, navigate, useLocation } from '../router';
import type { Limit, Policy } from '../types';

const KIND_LABELS: Record<Limit['kind'], string> = {
  per_call: 'Per payment',
  per_hour: 'Per hour',
  daily: 'Per day',
  weekly: 'Per week',
  monthly: 'Per month',
  per_endpoint: 'Per endpoint per day',
};

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
};

export function Policies() {
  const tick = useRefreshTick();
  const saved = new URLSearchParams(useLocation().search).get('saved');
  const [changed, setChanged] = useState(0);
  const [outcome, act] = useOutcome(() => setChanged((n) => n + 1));
  const right = useChangeRight();
  // Limits compare sums of every asset's amounts: in the team's assets (mixed, said so, if several).
  const assets = useTeamAssets();
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
                  <div class="muted">
                    {p.agents.length ? p.agents.join(', ') : 'every agent'}
                    {p.limits.map((l, i) => (
                      <span key={i} class="limit">
                        {' · '}
                        {KIND_LABELS[l.kind]}
                        {l.endpoint ? ` (${l.endpoint})` : ''}: <Money value={l.amount} denomination={assets} />
                      </span>
                    ))}
                  </div>
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
  kind: Limit['kind'];
  amount: string;
  endpoint: string;
}

function PolicyForm({ policy }: { policy?: Policy }) {
  const right = useChangeRight();
  const [name, setName] = useState(policy?.name ?? '');
  const [agents, setAgents] = useState(policy?.agents.join(', ') ?? '');
  const [limits, setLimits] = useState<LimitDraft[]>(policy?.limits.map((l) => ({ kind: l.kind, amount: l.amount, endpoint: l.endpoint ?? '' })) ?? [{ kind: 'daily', amount: '', endpoint: '' }]);
  const [action, setAction] = useState<Policy['action']>(policy?.action ?? 'flag');
  const [active, setActive] = useState(policy?.active ?? true);
  const [timezone, setTimezone] = useState(policy?.timezone ?? '');
  const setLimit = (i: number, change: Partial<LimitDraft>) => setLimits((ls) => ls.map((l, j) => (j === i ? { ...l, ...change } : l)));

  const [error, submit, busy] = useSubmit(async () => {
    const body = {
      name,
      agents: agents
        .split(/[\s,]+/)
        .map((a) => a.trim())
        .filter(Boolean),
      limits: limits.map((l) => (l.kind === 'per_endpoint' ? { kind: l.kind, amount: l.amount.trim(), endpoint: l.endpoint.trim() } : { kind: l.kind, amount: l.amount.trim() })),
      action,
      active,
      timezone: timezone.trim() || null,
    };
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
        <legend>Limits</legend>
        <FieldMessage error={error} field="limits" exact />
        {limits.map((limit, i) => (
          <div class="limit-row" key={i}>
            <label>
              Kind{' '}
              <select value={limit.kind} onChange={(e) => setLimit(i, { kind: e.currentTarget.value as Limit['kind'] })}>
                {(Object.keys(KIND_LABELS) as Limit['kind'][]).map((k) => (
                  <option key={k} value={k}>
                    {KIND_LABELS[k]}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Amount{' '}
              <input inputMode="decimal" name={`limits[${i}].amount`} value={limit.amount} onInput={(e) => setLimit(i, { amount: e.currentTarget.value })} {...invalidProps(error, `limits[${i}].amount`)} />
            </label>
            {limit.kind === 'per_endpoint' && (
              <label>
                Endpoint{' '}
                <input placeholder="api.example.com" value={limit.endpoint} onInput={(e) => setLimit(i, { endpoint: e.currentTarget.value })} {...invalidProps(error, `limits[${i}].endpoint`)} />
              </label>
            )}
            {limits.length > 1 && (
              <button type="button" onClick={() => setLimits((ls) => ls.filter((_, j) => j !== i))} aria-label={`Remove limit ${i + 1}`}>
                Remove
              </button>
            )}
            <FieldMessage error={error} field={`limits[${i}].amount`} />
            <FieldMessage error={error} field={`limits[${i}].endpoint`} />
            <FieldMessage error={error} field={`limits[${i}].kind`} />
          </div>
        ))}
        <button type="button" onClick={() => setLimits((ls) => [...ls, { kind: 'per_call', amount: '', endpoint: '' }])}>
          Add a limit
        </button>
      </fieldset>

      <fieldset>
        <legend>When a limit is broken</legend>
        {(['flag', 'block'] as const).map((a) => (
          <label key={a} class="action-choice">
            <input type="radio" name="action" checked={action === a} onChange={() => setAction(a)} aria-describedby={`action-${a}-effect`} />
            <strong>{ACTIONS[a].label}</strong>
            <span class="muted" id={`action-${a}-effect`}>
              {ACTIONS[a].effect}
            </span>
          </label>
        ))}
      </fieldset>

      <label for="policy-timezone">Time zone of daily limits (IANA, e.g. Europe/Lisbon; empty: UTC)</label>
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
