/**
 * Filters that live in the page's URL (so a filtered view can be bookmarked and linked to): a
 * text taken when one leaves the field or presses Enter, a choice, and a time typed in the
 * dashboard's zone.
 */
import { useEffect, useState } from 'preact/hooks';
import { replaceParam } from '../router';
import { msToZonedInput, zonedInputToMs } from '../time';
import { useTimeZone } from '../zone';

export function TextFilter({ label, name, value, placeholder = 'any' }: { label: string; name: string; value: string; placeholder?: string }) {
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  const commit = () => text.trim() !== value && replaceParam(name, text.trim());
  return (
    <label>
      {label}{' '}
      <input
        name={name}
        value={text}
        placeholder={placeholder}
        onInput={(e) => setText(e.currentTarget.value)}
        onBlur={commit}
        onKeyDown={(e) => e.key === 'Enter' && (e.preventDefault(), commit())}
      />
    </label>
  );
}

export function ChoiceFilter({ label, name, value, choices, any = 'any' }: { label: string; name: string; value: string; choices: readonly string[]; any?: string }) {
  return (
    <label>
      {label}{' '}
      <select name={name} value={value} onChange={(e) => replaceParam(name, e.currentTarget.value)}>
        <option value="">{any}</option>
        {choices.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
      </select>
    </label>
  );
}

/** An instant (ISO 8601 in the URL), typed as a wall time of the dashboard's zone. */
export function TimeFilter({ label, name, value }: { label: string; name: string; value: string }) {
  const zone = useTimeZone();
  const ms = Date.parse(value);
  return (
    <label title={`In ${zone}`}>
      {label}{' '}
      <input
        type="datetime-local"
        name={name}
        value={Number.isFinite(ms) ? msToZonedInput(ms, zone) : ''}
        onChange={(e) => {
          const typed = zonedInputToMs(e.currentTarget.value, zone);
          replaceParam(name, typed === undefined ? undefined : new Date(typed).toISOString());
        }}
      />
    </label>
  );
}
