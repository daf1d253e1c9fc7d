import { denominationLabel, denominationNote, exactAmount, shownAmount, UNKNOWN, type Denomination } from '../money';

/**
 * An amount: rounded by magnitude with its asset ("12.35 USDC"), every digit in the tooltip and in
 * data-exact (what the API said, for anyone who needs it whole). `bare` leaves the asset out of the
 * text (still in the tooltip) where the figures of one sentence share it and it is said once.
 */
export function Money({ value, denomination = UNKNOWN, bare }: { value: string | null | undefined; denomination?: Denomination; bare?: boolean }) {
  if (value === null || value === undefined) return <span class="money">–</span>;
  const shown = shownAmount(value);
  const label = denominationLabel(denomination);
  const title = `${exactAmount(value)}${denomination.kind === 'asset' ? ` ${denomination.asset}` : ''}${denomination.kind === 'asset' ? '' : ` (${denominationNote(denomination)})`}`;
  return (
    <span class="money" title={title} data-exact={value} data-rounded={shown.rounded ? '' : undefined}>
      {shown.text}
      {label && !bare && <span class={`asset${denomination.kind === 'mixed' ? ' mixed' : ''}`}> {label}</span>}
    </span>
  );
}
