/**
 * A Bloom filter of (team, id) keys that grows by chaining: each new link has twice the capacity
 * of the last, at about 10 bits per key and 7 probes (about 1% false positives per link). It says
 * "certainly not seen" or "maybe seen"; a maybe is settled by SQLite. It never says "not seen" for
 * a key that was added, so it can only cost a look-up, never a duplicate.
 */
const BITS_PER_KEY = 10;
const PROBES = 7;
const FIRST_CAPACITY = 1 << 20;

class Link {
  readonly bits: Uint32Array;
  readonly size: number;
  count = 0;

  constructor(readonly capacity: number) {
    this.size = capacity * BITS_PER_KEY;
    this.bits = new Uint32Array(Math.ceil(this.size / 32));
  }

  add(h1: number, h2: number): void {
    for (let i = 0; i < PROBES; i++) {
      const bit = (h1 + i * h2) % this.size;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.count++;
  }

  has(h1: number, h2: number): boolean {
    for (let i = 0; i < PROBES; i++) {
      const bit = (h1 + i * h2) % this.size;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

/** Two independent 32-bit hashes of team + '\0' + id (FNV-1a and a multiply-rotate variant). */
function hashes(teamId: string, id: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  const mix = (code: number) => {
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x5bd1e995);
    b ^= b >>> 15;
  };
  for (let i = 0; i < teamId.length; i++) mix(teamId.charCodeAt(i));
  mix(0);
  for (let i = 0; i < id.length; i++) mix(id.charCodeAt(i));
  // Unsigned, and the second odd so probes differ.
  return [a >>> 0, (b | 1) >>> 0];
}

export class IdFilter {
  private readonly links: Link[] = [new Link(FIRST_CAPACITY)];
  /** True once every key of its day's table has been added (built from the table, or new and empty). */
  complete = false;

  add(teamId: string, id: string): void {
    let last = this.links.at(-1)!;
    if (last.count >= last.capacity) this.links.push((last = new Link(last.capacity * 2)));
    const [h1, h2] = hashes(teamId, id);
    last.add(h1, h2);
  }

  mayHave(teamId: string, id: string): boolean {
    const [h1, h2] = hashes(teamId, id);
    return this.links.some((link) => link.has(h1, h2));
  }
}
