/**
 * `body` cut into `count` pieces at uneven offsets (inside rows; the first piece is empty), in order: a
 * block as its chunks' bodies reach the store, to check that the parts arrive whole and in order.
 */
export function piecesOf(body: Buffer, count: number): Buffer[] {
  const cuts = Array.from({ length: count - 1 }, (_, i) => Math.floor((body.length * ((i * 7919) % count)) / count)).sort((a, b) => a - b);
  return [0, ...cuts].map((start, i) => body.subarray(start, i < cuts.length ? cuts[i] : body.length));
}
