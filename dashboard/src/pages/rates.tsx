/**
 * Rates (GET /rates, /rates/:asset): the team's currency, what each asset is worth in it now (the
 * built-in pegs and the team's own rates), each asset's history a click away. An admin key changes
 * the currency, sets a rate from a time on and ends one; another key reads the page, its controls
 * disabled with the reason (as on the other pages).
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { ChangeButton, ReadOnlyNote } from '../components/change-controls';
import { FieldMessage, FormError, invalidProps, OutcomeMessage, useOutcome, useSubmit } from '../components/form';
import { Panel, useLoad } from '../components/panel';
import { useRefreshTick } from '../components/range-bar';
import { TableHead } from '../components/table-head';
import { Time } from '../components/time';
import type { Rate, RateList, Team } from '../types';

export function Rates() {
  const tick = useRefreshTick();
  const [changed, setChanged] = useState(0);
  const reload = () => setChanged((n) => n + 1);
  const load = useLoad((signal) => api<RateList>('GET', '/rates', { signal }), [changed], tick);
  const [outcome, run] = useOutcome(reload);
  return (
    <>
      <div class="page-head">
        <h1>Rates</h1>
      </div>
      <Panel id="rates" title="What one unit of each asset is worth" load={load} isEmpty={(r) => r.data.length === 0}>
        {(list) => (
          <>
            <p data-team-currency={list.currency}>
              Records are valued in <strong>{list.currency}</strong>, the team's currency, when they are acknowledged: their amount
              times the rate valid at their time. An asset with no rate into {list.currency} is stored unvalued.
            </p>
            <ReadOnlyNote />
            <table class="rows-table" data-rates>
              <TableHead columns={['Asset', { label: 'One unit is worth', num: true }, { label: `In ${list.currency}`, num: true }, 'Since', 'Source', { label: 'Actions', hidden: true }]} />
              <tbody>
                {list.data.map((r) => (
                  <RateRow key={r.asset} rate={r} currency={list.currency} onEnd={() => run(async () => void (await api<Rate>('DELETE', `/rates/${encodeURIComponent(r.asset)}`)))} />
                ))}
              </tbody>
            </table>
            <OutcomeMessage outcome={outcome} />
            <TeamCurrency currency={list.currency} onChanged={reload} />
          </>
        )}
      </Panel>
      <SetRate onChanged={reload} />
    </>
  );
}

function RateRow({ rate: r, currency, onEnd }: { rate: Rate; currency: string; onEnd: () => void }) {
  const [open, setOpen] = useState(false);
  return (
    <tr data-rate={r.asset} data-source={r.source}>
      <td class="row-main">
        <details onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
          <summary>
            <code>{r.asset}</code>
          </summary>
          {open && <RateHistory asset={r.asset} />}
        </details>
        {r.decimals !== null && <div class="muted">{r.decimals} decimals</div>}
      </td>
      <td class="num" data-label="One unit is worth" data-exact={r.value ?? ''}>
        {r.value} {r.currency}
      </td>
      <td class="num" data-label={`In ${currency}`} data-in-team-currency={r.value_in_team_currency ?? ''}>
        {r.value_in_team_currency ?? (
          <span class="muted" title={`No rate converts ${r.currency} into ${currency}: records in ${r.asset} are stored unvalued`}>
            no rate
          </span>
        )}
      </td>
      <td data-label="Since">{r.source === 'built-in' ? <span class="muted">always</span> : <Time iso={r.valid_from} />}</td>
      <td data-label="Source">{r.source === 'built-in' ? 'built-in peg' : 'the team'}</td>
      <td>
        {r.source === 'team' && (
          <ChangeButton class="danger" title={`End the team's rate of ${r.asset} from now (its history stays)`} onClick={onEnd}>
            End
          </ChangeButton>
        )}
      </td>
    </tr>
  );
}

/** An asset's versions, latest first (the first 50). */
function RateHistory({ asset }: { asset: string }) {
  const load = useLoad((signal) => api<{ data: Rate[] }>('GET', `/rates/${encodeURIComponent(asset)}`, { query: { limit: 50 }, signal }), [asset], 0);
  if (load.data === undefined) return <div class="muted">{load.state === 'error' ? 'The history could not be read.' : 'Loading…'}</div>;
  return (
    <ol class="rate-history" data-rate-history={asset}>
      {load.data.data.map((v) => (
        <li key={`${v.valid_from}-${v.source}`}>
          {v.source === 'built-in' ? 'built-in peg' : <Time iso={v.valid_from} absolute />}: {v.value === null ? 'ended' : `${v.value} ${v.currency}`}
        </li>
      ))}
    </ol>
  );
}

function TeamCurrency({ currency, onChanged }: { currency: string; onChanged: () => void }) {
  const [value, setValue] = useState(currency);
  const [error, submit] = useSubmit(async () => {
    await api<Team>('PATCH', '/team', { body: { currency: value.trim().toUpperCase() } });
    onChanged();
  });
  return (
    <details class="create">
      <summary>Change the team currency</summary>
      <form class="stack" onSubmit={submit} noValidate>
        <p class="muted">Records from the change on are valued in the new currency; those stored before keep their values.</p>
        <label for="team-currency">Currency (ISO 4217)</label>
        <input id="team-currency" value={value} maxLength={3} onInput={(e) => setValue(e.currentTarget.value)} {...invalidProps(error, 'currency')} />
        <FieldMessage error={error} field="currency" />
        <FormError error={error} />
        <div>
          <ChangeButton type="submit">Change currency</ChangeButton>
        </div>
      </form>
    </details>
  );
}

function SetRate({ onChanged }: { onChanged: () => void }) {
  const empty = { asset: '', value: '', currency: 'USD', valid_from: '', decimals: '' };
  const [fields, setFields] = useState(empty);
  const [done, setDone] = useState<string | undefined>();
  const [error, submit] = useSubmit(async () => {
    setDone(undefined);
    const body: Record<string, unknown> = { value: fields.value.trim(), currency: fields.currency.trim().toUpperCase() };
    if (fields.valid_from) body.valid_from = new Date(fields.valid_from).toISOString();
    if (fields.decimals.trim() !== '') body.decimals = Number(fields.decimals.trim());
    const set = await api<Rate>('PUT', `/rates/${encodeURIComponent(fields.asset.trim())}`, { body });
    setDone(`${set.asset} is worth ${set.value} ${set.currency} from ${new Date(set.valid_from).toLocaleString()}.`);
    setFields(empty);
    onChanged();
  });
  const input = (name: keyof typeof fields, label: string, props: Record<string, unknown> = {}) => (
    <>
      <label for={`rate-${name}`}>{label}</label>
      <input id={`rate-${name}`} value={fields[name]} onInput={(e) => setFields({ ...fields, [name]: e.currentTarget.value })} {...props} {...invalidProps(error, name)} />
      <FieldMessage error={error} field={name} />
    </>
  );
  return (
    <section class="panel" data-panel="set-rate" data-state="ready" aria-labelledby="set-rate-title">
      <header class="panel-head">
        <h2 id="set-rate-title">Set a rate</h2>
      </header>
      <details class="create">
        <summary>Set the rate of an asset or a currency</summary>
        <form class="stack" onSubmit={submit} noValidate>
          {input('asset', 'Asset: a symbol, a token address, or a currency code (EUR converts euros)')}
          {input('value', 'One unit is worth', { inputMode: 'decimal' })}
          {input('currency', 'In (ISO 4217)', { maxLength: 3 })}
          {input('valid_from', 'From (empty: now)', { type: 'datetime-local', step: 1 })}
          {input('decimals', 'Decimals of its smallest unit (optional; carried on from the last version)', { inputMode: 'numeric' })}
          <FormError error={error} />
          <div>
            <ChangeButton type="submit">Set rate</ChangeButton>
          </div>
        </form>
      </details>
      {done && (
        <div class="notice" role="status">
          {done}
        </div>
      )}
    </section>
  );
}
