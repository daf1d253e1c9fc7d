/**
 * The time range every overview panel reads: a preset relative to now (recomputed at each refresh)
 * or a custom from/to. It lives in the page's URL query (?range=24h, or ?from=…&to=…) so a view can
 * be bookmarked and shared; the key never does.
 */
export type Preset = '1h' | '24h' | '7d' | '30d' | '90d';
export type Granularity = 'minute' | 'hour' | 'day' | 'week' | 'month';

export const PRESETS: { value: Preset; label: string; ms: number }[] = [
  { value: '1h', label: 'Last hour', ms: 3_600_000 },
  { value: '24h', label: '24 hours', ms: 86_400_000 },
  { value: '7d', label: '7 days', ms: 7 * 86_400_000 },
  { value: '30d', label: '30 days', ms: 30 * 86_400_000 },
  { value: '90d', label: '90 days', ms: 90 * 86_400_000 },
];

export type RangeChoice = { preset: Preset } | { from: number; to: number };

export interface Range {
  from: number;
  to: number;
}

export function resolveRange(choice: RangeChoice, now = Date.now()): Range {
  if ('preset' in choice) {
    const ms = PRESETS.find((p) => p.value === choice.preset)!.ms;
    return { from: now - ms, to: now };
  }
  return { from: choice.from, to: choice.to };
}

/**
 * Buckets for a chart of the range: enough points to see a shape, few enough to read one (and the
 * API's zero-filled series stays small): at most about 200.
 */
export function granularityFor(range: Range): Granularity {
  const span = range.to - range.from;
  if (span <= 3 * 3_600_000) return 'minute';
  if (span <= 8 * 86_400_000) return 'hour';
  if (span <= 200 * 86_400_000) return 'day';
  if (span <= 3 * 365 * 86_400_000) return 'week';
  return 'month';
}

export function choiceFromQuery(search: string): RangeChoice {
  const params = new URLSearchParams(search);
  const from = Date.parse(params.get('from') ?? '');
  const to = Date.parse(params.get('to') ?? '');
  if (Number.isFinite(from) && Number.isFinite(to) && from < to) return { from, to };
  const preset = params.get('range') as Preset | null;
  return { preset: PRESETS.some((p) => p.value === preset) ? preset! : '24h' };
}

export function choiceToQuery(choice: RangeChoice): string {
  if ('preset' in choice) return `range=${choice.preset}`;
  return `from=${new Date(choice.from).toISOString()}&to=${new Date(choice.to).toISOString()}`;
}
