import crypto from 'node:crypto';

/**
 * `count` random SDK-shaped ids (16 hex digits) in key order, in chunks of about count / 65,536
 * (a hundred million never sit in memory at once): 65,536 buckets by the first 16 bits, each
 * sorted. Filling an index in key order gives the state a day of random claims leaves, in seconds
 * rather than the hours random order would take (bench:ingest --prefill).
 */
export function* sortedIds(count: number): Generator<string[]> {
  const buckets = 65_536;
  let made = 0;
  for (let b = 0; b < buckets && made < count; b++) {
    const n = Math.min(count - made, Math.ceil((count - made) / (buckets - b)));
    const prefix = b.toString(16).padStart(4, '0');
    const random = crypto.randomBytes(6 * n).toString('hex');
    yield Array.from({ length: n }, (_, i) => prefix + random.slice(12 * i, 12 * i + 12)).sort();
    made += n;
  }
}
