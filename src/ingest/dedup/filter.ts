/**
 * The Bloom filter of one immutable run of claimed (team, id) keys: a split-block filter (as
 * Parquet's), sized once for the run's keys. Each key sets one bit in each of the 8 words of one
 * 256-bit block, so a look-up reads one cache line, and a key not in the run is usually told
 * apart at the first word (a claim checks every run of the window). 12 bits per key: about 0.3%
 * of absent keys answer "maybe", and a maybe costs one primary-key probe of the run's file.
 *
 * It never says "absent" for a key that was added: it can cost a probe, never a duplicate. Its
 * words are stored with the run (run-file.ts), so a restart loads them instead of re-reading keys.
 */
const BITS_PER_KEY = 12;
const WORDS_PER_BLOCK = 8;
const SALT = [0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31];

/** murmur3's final avalanche: every output bit depends on every input bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Two independent 32-bit hashes of team + '\0' + id: the block, and the bits within it. */
export interface KeyHash {
  block: number;
  bits: number;
}

/** The hash state after team + '\0': computed once per claim, continued per id by keyHash. */
export interface TeamHash {
  a: number;
  b: number;
}

export function teamHash(teamId: string): TeamHash {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i <= teamId.length; i++) {
    const code = i < teamId.length ? teamId.charCodeAt(i) : 0;
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return { a, b };
}

/** FNV-1a and a multiply-rotate variant over team + '\0' + id, each finished by fmix32. */
export function keyHash(team: TeamHash | string, id: string): KeyHash {
  const start = typeof team === 'string' ? teamHash(team) : team;
  let a = start.a;
  let b = start.b;
  for (let i = 0; i < id.length; i++) {
    const code = id.charCodeAt(i);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return { block: fmix32(a), bits: fmix32(b) };
}

export class RunFilter {
  private readonly blocks: number;

  /** `words`: a filter as stored (run-file.ts); else an empty one for `keys` keys. */
  constructor(readonly words: Uint32Array) {
    this.blocks = words.length / WORDS_PER_BLOCK;
  }

  static sized(keys: number): RunFilter {
    const blocks = Math.max(1, Math.ceil((Math.max(1, keys) * BITS_PER_KEY) / (32 * WORDS_PER_BLOCK)));
    return new RunFilter(new Uint32Array(blocks * WORDS_PER_BLOCK));
  }

  add(h: KeyHash): void {
    const base = (h.block % this.blocks) * WORDS_PER_BLOCK;
    for (let i = 0; i < WORDS_PER_BLOCK; i++) this.words[base + i]! |= 1 << (Math.imul(h.bits, SALT[i]!) >>> 27);
  }

  mayHave(h: KeyHash): boolean {
    const base = (h.block % this.blocks) * WORDS_PER_BLOCK;
    for (let i = 0; i < WORDS_PER_BLOCK; i++) {
      if ((this.words[base + i]! & (1 << (Math.imul(h.bits, SALT[i]!) >>> 27))) === 0) return false;
    }
    return true;
  }

  /** The words as bytes (this machine's order: a run file is read where it was written). */
  bytes(): Buffer {
    return Buffer.from(this.words.buffer, this.words.byteOffset, this.words.byteLength);
  }

  static fromBytes(bytes: Uint8Array): RunFilter {
    // A copy aligned for 32-bit words (a SQLite blob's buffer may start anywhere).
    const words = new Uint32Array(bytes.byteLength / 4);
    new Uint8Array(words.buffer).set(bytes);
    return new RunFilter(words);
  }
}
