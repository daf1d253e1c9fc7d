/**
 * Budgets: every row of GET /budgets in the API's order (closest to its limit first), each a bar
 * of what is spent and held against the limit, with the policy's alert thresholds and where the
 * window is heading. The Policies page shows each policy's fullest budget per kind (CurrentUse).
 */
import type { JSX } from 'preact';
import { api, type Page } from '../api';
import { useTeamAssets } from '../assets';
import { Money } from '../components/money';
import { Panel, useLoad } from '../components/panel';
import { useRefreshTick, ZonePicker } from '../components/range-bar';
import { Time, TimeWindow } from '../components/time';
import { formatCalls, isCallKind, KIND_WORDS, policyDenomination } from '../limits';
import { formatMoney, ratioOf, type Denomination } from '../money';
import { href, navigate, useLocation } from '../router';
import type { Budget, BudgetList, Policy } from '../types';

/** The budgets page, filtered to one policy or not. */
export const budgetsHref = (policyId?: string) => (policyId ? `${href('budgets')}?policy_id=${encodeURIComponent(policyId)}` : href('budgets'));

/** Every policy of the team (all pages): budgets need their members, match and starts_at. */
async function fetchAllPolicies(signal: AbortSignal): Promise<Policy[]> {
  const all: Policy[] = [];
  let cursor: string | undefined;
  do {
    const page = await api<Page<Policy>>('GET', '/policies', { query: { limit: 200, cursor }, signal });
    all.push(...page.data);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return all;
}

/**
 * A share of the limit in percent, cut (not rounded) toward zero so that a budget shows 100% only
 * once it is used up; one decimal below 10%, where a whole percent says too little.
 */
export function formatUsed(used: number | null): string {
  if (used === null) return 'limit 0';
  // The API's used has 6 places; the epsilon keeps 0.29 from reading as 28.99…%.
  const percent = used * 100 + 1e-9;
  return percent < 10 ? `${Math.floor(percent * 10) / 10}%` : `${Math.floor(percent)}%`;
}

const capitalised = (text: string) => text[0]!.toUpperCase() + text.slice(1);

export function Budgets() {
  const location = useLocation();
  const tick = useRefreshTick();
  const policyId = new URLSearchParams(location.search).get('policy_id') || undefined;
  const budgets = useLoad((signal) => api<BudgetList>('GET', '/budgets', { query: { policy_id: policyId }, signal }), [policyId], tick);
  const policies = useLoad(fetchAllPolicies, [], tick);
  const byId = new Map((policies.data ?? []).map((p) => [p.id, p]));
  const team = useTeamAssets();
  const filtered = policyId ? byId.get(policyId) : undefined;
  return (
    <>
      <div class="page-head">
        <h1>Budgets</h1>
      </div>
      <form class="filters" aria-label="Filter budgets" onSubmit={(e) => e.preventDefault()}>
        <label>
          Policy{' '}
          <select name="policy_id" value={policyId ?? ''} onChange={(e) => navigate(budgetsHref(e.currentTarget.value || undefined), { replace: true })}>
            <option value="">every policy</option>
            {/* The filter of a link stays shown while the list loads, or if the policy is gone. */}
            {policyId && !filtered && <option value={policyId}>{policyId}</option>}
            {(policies.data ?? []).map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
                {p.active ? '' : ' (inactive)'}
              </option>
            ))}
          </select>
        </label>
        <ZonePicker />
      </form>
      <Panel
        id="budgets"
        title="Current windows, closest to the limit first"
        load={budgets}
        isEmpty={(list) => list.data.length === 0}
        empty={
          policyId
            ? 'This policy has no budget now: it is inactive, or has only per-payment limits.'
            : 'No budgets yet: an active policy with a limit over a window (per hour, day, week, month, in total, or on calls) makes one.'
        }
      >
        {(list) => (
          <>
            {list.truncated && (
              <p class="notice warn" role="status" data-truncated>
                Only the first {list.data.length.toLocaleString('en-US')} budgets are listed, the fullest first. Choose a policy above to see all of its own.
              </p>
            )}
            <BarLegend />
            <ul class="budget-list">
              {list.data.map((b) => (
                <BudgetRow
                  key={`${b.policy_id}\u0000${b.kind}\u0000${b.endpoint ?? ''}\u0000${b.agent_id ?? ''}`}
                  budget={b}
                  policy={byId.get(b.policy_id)}
                  denomination={policyDenomination(byId.get(b.policy_id)?.match, team, b.currency)}
                />
              ))}
            </ul>
          </>
        )}
      </Panel>
    </>
  );
}

/** What the parts of a bar mean, once above the bars. */
function BarLegend() {
  const items: [string, string][] = [
    ['spent', 'spent'],
    ['held', 'held by open authorizations'],
    ['tick', 'alert threshold'],
    ['forecast', 'forecast at the window’s end'],
    ['over', 'over the limit'],
  ];
  return (
    <p class="budget-legend muted" aria-hidden="true">
      {items.map(([swatch, text]) => (
        <span key={swatch}>
          <span class={`swatch ${swatch}`} /> {text}
        </span>
      ))}
    </p>
  );
}

/** A decimal string that is zero: a share of a limit of 0 is none, or everything. */
const isZero = (value: string) => /^0*(\.0*)?$/.test(value);

/** How far past its limit a bar may stretch (the rest is said in words). */
const MAX_SCALE = 2;

/** A value's place on the bar as a share of the limit (drawing only; the figures stay strings). */
function shareOfLimit(value: string, limit: string): number {
  return ratioOf(value, limit) ?? (isZero(value) ? 0 : Infinity);
}

function BudgetRow({ budget: b, policy, denomination }: { budget: Budget; policy: Policy | undefined; denomination: Denomination }) {
  const calls = isCallKind(b.kind);
  // The figures of a sentence share one asset: said once, after the last of them.
  const figure = (value: string, name: string, bare = false) => (
    <span data-figure={name}>{calls ? <span class="count" data-exact={value}>{value}</span> : <Money value={value} denomination={denomination} bare={bare} />}</span>
  );
  const reached = b.used === null ? !isZero(b.spent) || !isZero(b.held) : b.used >= 1;
  const subject = b.agent_id === null ? 'the pool' : `agent ${b.agent_id}`;
  const said = (value: string) => (calls ? formatCalls(value) : formatMoney(value, denomination));
  const valueText = `spent ${said(b.spent)} and held ${said(b.held)} of ${said(b.limit)}, ${formatUsed(b.used)}${reached ? ', the limit is reached' : ''}`;
  return (
    <li class="budget" data-budget data-policy={b.policy_id} data-kind={b.kind} data-agent={b.agent_id ?? undefined} data-reached={reached ? '' : undefined}>
      <div class="budget-head">
        <a class="budget-policy" href={href('policies', b.policy_id)}>
          {b.policy_name}
        </a>
        <span class="budget-kind">{capitalised(KIND_WORDS[b.kind])}</span>
        {b.endpoint && <code class="budget-endpoint">{b.endpoint}</code>}
        <span class="budget-subject">
          {b.agent_id === null ? (
            <>
              <span class="badge scope-pool">pool</span> <span class="muted">{poolMembers(policy)}</span>
            </>
          ) : (
            <>
              <span class="muted">agent</span> <a href={href('agents', b.agent_id)}>{b.agent_id}</a>
            </>
          )}
        </span>
        <span class="badge" title={b.action === 'block' ? 'Authorizations that would break it are declined' : b.action === 'approve' ? 'Authorizations that would break it wait for a person' : 'Breaking it raises a warning'}>
          {b.action}
        </span>
      </div>
      <BudgetBar budget={b} label={`${b.policy_name}, ${KIND_WORDS[b.kind]}, ${subject}`} valueText={valueText} />
      <p class="budget-figures">
        <strong>
          spent {figure(b.spent, 'spent', true)} + held {figure(b.held, 'held', true)} of {figure(b.limit, 'limit')}
          {calls ? ' calls' : ''}
        </strong>{' '}
        <span data-figure="used">({formatUsed(b.used)})</span>
        <span class="budget-window">
          <BudgetWindow budget={b} policy={policy} />
        </span>
      </p>
      <p class="budget-forecast muted">
        <Forecast budget={b} reached={reached} figure={figure} />
        {b.notify_at.length > 0 && (
          <span data-thresholds>
            {' · '}alerts at {b.notify_at.map((p) => `${p}%`).join(', ')}
          </span>
        )}
      </p>
    </li>
  );
}

/** Who shares a pool: the agents it names, or the whole team. */
function poolMembers(policy: Policy | undefined): string {
  if (!policy) return '';
  return policy.agents.length ? `of ${policy.agents.join(', ')}` : 'of the whole team';
}

/** The window in the one time format; a total counts from the policy's starts_at, with no end. */
function BudgetWindow({ budget: b, policy }: { budget: Budget; policy: Policy | undefined }) {
  if (b.window) return <TimeWindow start={b.window.start} end={b.window.end} />;
  if (b.kind !== 'total' || !policy) return null;
  if (Date.parse(policy.starts_at) > Date.now()) {
    return (
      <span class="window">
        starts <Time iso={policy.starts_at} absolute />
      </span>
    );
  }
  return <TimeWindow start={policy.starts_at} end={null} />;
}

function Forecast({ budget: b, reached, figure }: { budget: Budget; reached: boolean; figure: (value: string, name: string) => JSX.Element }) {
  // With nothing spent there is no rate to carry on: a forecast of 0 would say nothing.
  if (isZero(b.spent) && !reached) return <span>nothing spent yet in this window</span>;
  const parts: JSX.Element[] = [];
  if (b.forecast.spent_at_end !== null) {
    parts.push(
      <span key="end" data-forecast="spent_at_end">
        on course for {figure(b.forecast.spent_at_end, 'spent_at_end')}
        {isCallKind(b.kind) ? ' calls' : ''} by the window’s end
      </span>,
    );
  }
  // exhausted_at is "now" once the limit is reached: that is said as such, not as a time.
  if (reached) parts.push(<strong key="reached" class="budget-reached">the limit is reached</strong>);
  else if (b.forecast.exhausted_at !== null) {
    parts.push(
      <span key="out" data-forecast="exhausted_at">
        runs out at <Time iso={b.forecast.exhausted_at} absolute />
      </span>,
    );
  }
  if (parts.length === 0) return <span>nothing spent yet in this window</span>;
  return <>{parts.flatMap((p, i) => (i === 0 ? [p] : [<span key={`sep${i}`}>, </span>, p]))}</>;
}

/**
 * The bar: the limit fills it, unless spend (or its forecast) goes past; then it stretches, up to
 * twice the limit, and a line marks where the limit is, so going over shows as length, not colour
 * alone. For assistive technology it is a meter whose text says the figures.
 */
function BudgetBar({ budget: b, label, valueText }: { budget: Budget; label: string; valueText: string }) {
  const spent = shareOfLimit(b.spent, b.limit);
  const held = shareOfLimit(b.held, b.limit);
  const forecast = b.forecast.spent_at_end === null || isZero(b.spent) ? undefined : shareOfLimit(b.forecast.spent_at_end, b.limit);
  const used = spent + held;
  const scale = Math.min(MAX_SCALE, Math.max(1, used, forecast ?? 0));
  const at = (share: number) => `${(Math.min(share, scale) / scale) * 100}%`;
  const span = (from: number, to: number) => ({ left: at(from), width: `calc(${at(to)} - ${at(from)})` });
  const percent = b.used === null ? (used > 0 ? 100 : 0) : Math.min(100, Math.max(0, Math.round(b.used * 100)));
  return (
    <div
      class={`budget-bar${scale > 1 ? ' stretched' : ''}`}
      role="meter"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={percent}
      aria-valuetext={valueText}
      data-scale={scale}
    >
      <span class="limit-area" style={{ width: at(1) }} />
      <span class="spent" style={span(0, spent)} data-share={spent} />
      <span class="held" style={span(spent, used)} data-share={held} />
      {used > 1 && <span class="over" style={span(1, used)} />}
      {scale > 1 && <span class="limit-line" style={{ left: at(1) }} title="the limit" />}
      {b.notify_at.map((p) => (
        <span key={p} class="tick" style={{ left: at(p / 100) }} data-percent={p} title={`alert at ${p}%`} />
      ))}
      {forecast !== undefined && <span class={`forecast-mark${forecast > scale ? ' beyond' : ''}`} style={{ left: at(forecast) }} data-share={forecast} />}
    </div>
  );
}

/**
 * A policy's use of its current windows, for the Policies list: per limit kind, the fullest
 * budget (the API lists the fullest first), linking to them on the Budgets page.
 */
export function CurrentUse({ policyId, budgets }: { policyId: string; budgets: Budget[] | undefined }) {
  const fullest = new Map<Budget['kind'], Budget>();
  for (const b of budgets ?? []) if (b.policy_id === policyId && !fullest.has(b.kind)) fullest.set(b.kind, b);
  if (fullest.size === 0) return null;
  return (
    <div class="policy-use" data-current-use>
      <a href={budgetsHref(policyId)}>
        now:{' '}
        {[...fullest.values()].map((b, i) => (
          <span key={b.kind} data-use-kind={b.kind}>
            {i > 0 ? ' · ' : ''}
            {KIND_WORDS[b.kind]} {formatUsed(b.used)} ({b.agent_id ?? 'pool'})
          </span>
        ))}
      </a>
    </div>
  );
}
