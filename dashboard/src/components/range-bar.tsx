import { useEffect, useMemo, useState } from 'preact/hooks';
import { navigate, useLocation } from '../router';
import { choiceFromQuery, choiceToQuery, PRESETS, resolveRange, type Range, type RangeChoice } from '../range';
import { setZone, timeZones, useTimeZone } from '../zone';
import { TimeWindow } from './time';

const REFRESH_MS = 10_000;

/**
 * A tick that advances every 10 s while the tab is visible (and at once when it becomes visible
 * again), so panels refresh themselves without loading a hidden tab.
 */
export function useRefreshTick(): number {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const advance = () => document.visibilityState === 'visible' && setTick((n) => n + 1);
    const timer = setInterval(advance, REFRESH_MS);
    document.addEventListener('visibilitychange', advance);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', advance);
    };
  }, []);
  return tick;
}

/** The range (from the URL), the dashboard's time zone (kept for the tab), and the refresh tick. */
export function useRangeState() {
  const location = useLocation();
  const tick = useRefreshTick();
  const choice = useMemo(() => choiceFromQuery(location.search), [location.search]);
  // A preset moves with the clock at each refresh; a custom range stays put.
  const range = useMemo(() => resolveRange(choice), [choice, 'preset' in choice ? tick : 0]);
  const timeZone = useTimeZone();
  const setChoice = (next: RangeChoice) => {
    const params = new URLSearchParams(location.search);
    params.delete('range');
    params.delete('from');
    params.delete('to');
    const rest = params.toString();
    navigate(`/dashboard/${location.path}?${choiceToQuery(next)}${rest ? `&${rest}` : ''}`, { replace: true });
  };
  return { choice, range, setChoice, timeZone, tick };
}

/** datetime-local wants "YYYY-MM-DDTHH:mm" in local time. */
function toLocalInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

interface RangeBarProps {
  choice: RangeChoice;
  range: Range;
  onChoice: (choice: RangeChoice) => void;
}

export function RangeBar({ choice, range, onChoice }: RangeBarProps) {
  const custom = !('preset' in choice);
  const [editing, setEditing] = useState(false);
  const [from, setFrom] = useState(toLocalInput(range.from));
  const [to, setTo] = useState(toLocalInput(range.to));
  const [problem, setProblem] = useState('');
  const apply = (event: Event) => {
    event.preventDefault();
    const f = new Date(from).getTime();
    const t = new Date(to).getTime();
    if (!Number.isFinite(f) || !Number.isFinite(t)) return setProblem('Both dates are needed.');
    if (f >= t) return setProblem('The start must be before the end.');
    setProblem('');
    setEditing(false);
    onChoice({ from: f, to: t });
  };
  return (
    <div class="range-bar">
      <div class="toggle" role="group" aria-label="Time range">
        {PRESETS.map((p) => (
          <button key={p.value} type="button" aria-pressed={!custom && !editing && 'preset' in choice && choice.preset === p.value} onClick={() => (setEditing(false), onChoice({ preset: p.value }))}>
            {p.label}
          </button>
        ))}
        <button type="button" aria-pressed={custom || editing} onClick={() => (setFrom(toLocalInput(range.from)), setTo(toLocalInput(range.to)), setEditing(true))}>
          Custom
        </button>
      </div>
      {custom && !editing && (
        // The range as every time here is written; the browser's own date inputs only while editing.
        <span class="custom-range" data-custom-range>
          <TimeWindow start={new Date(range.from).toISOString()} end={new Date(range.to).toISOString()} />
        </span>
      )}
      {editing && (
        <form class="custom-range" onSubmit={apply}>
          <label>
            From <input type="datetime-local" value={from} onInput={(e) => setFrom(e.currentTarget.value)} required />
          </label>
          <label>
            To <input type="datetime-local" value={to} onInput={(e) => setTo(e.currentTarget.value)} required />
          </label>
          <button type="submit">Apply</button>
          {problem && (
            <span class="field-error" role="alert">
              {problem}
            </span>
          )}
        </form>
      )}
      <ZonePicker />
    </div>
  );
}

/** The zone every time on the dashboard is written in (one setting for all pages). */
export function ZonePicker() {
  const zone = useTimeZone();
  const zones = useMemo(timeZones, []);
  return (
    <label class="zone">
      Time zone{' '}
      <select value={zone} onChange={(e) => setZone(e.currentTarget.value)}>
        {zones.map((z) => (
          <option key={z} value={z}>
            {z}
          </option>
        ))}
      </select>
    </label>
  );
}
