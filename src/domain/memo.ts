/**
 * A function of a string remembered per key, for the ingest path's per-record work that repeats
 * from record to record (an endpoint's host, a host's category, a field's hash). Bounded: past
 * `bound` keys it starts again, so endless distinct keys cost the work again, never a wrong
 * answer; keys longer than `longestKey` are not kept. `undefined` answers are remembered too.
 */
export function memoized<V>(compute: (key: string) => V, bound = 10_000, longestKey = 512): (key: string) => V {
  const known = new Map<string, V>();
  return (key) => {
    const hit = known.get(key);
    if (hit !== undefined || known.has(key)) return hit as V;
    const value = compute(key);
    if (key.length <= longestKey) {
      if (known.size >= bound) known.clear();
      known.set(key, value);
    }
    return value;
  };
}
