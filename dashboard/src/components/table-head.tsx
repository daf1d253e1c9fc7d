/** A table's header row: plain names, or `{label, num}` for right-aligned figures, `{label, hidden}` for an unnamed column. */
export type Column = string | { label: string; num?: boolean; class?: string; hidden?: boolean };

export function TableHead({ columns }: { columns: Column[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => {
          const column = typeof c === 'string' ? { label: c } : c;
          const classes = [column.num ? 'num' : '', column.class ?? ''].filter(Boolean).join(' ');
          return (
            <th key={column.label} scope="col" class={classes || undefined}>
              {column.hidden ? <span class="sr-only">{column.label}</span> : column.label}
            </th>
          );
        })}
      </tr>
    </thead>
  );
}
