import type { ComponentChildren } from 'preact';

/** One figure of a panel's grid: a name, its value, and a note under it. */
export function Figure({ name, value, note, field, small }: { name: string; value: ComponentChildren; note?: ComponentChildren; field?: string; small?: boolean }) {
  return (
    <div class="figure" data-field={field}>
      <dt>{name}</dt>
      <dd class={small ? 'value small' : 'value'}>{value}</dd>
      {note && <dd class="note">{note}</dd>}
    </div>
  );
}
