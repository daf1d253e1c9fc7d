import crypto from 'node:crypto';

/** Every generated key starts with this, so a leaked key is recognisable in a scanner. */
const KEY_PREFIX = 'ss_';
/** How many characters of a key are stored and shown in clear to tell keys apart. */
const VISIBLE_CHARS = 10;

/** A new random key: 32 random bytes (256 bits) in base64url behind the `ss_` prefix. */
export function generateApiKey(): string {
  return KEY_PREFIX + crypto.randomBytes(32).toString('base64url');
}

/**
 * Keys are stored and looked up only by this hash. Every request hashes its key: the one-shot
 * `crypto.hash` costs a third of a Hash object's create, update and digest.
 */
export function hashApiKey(key: string): string {
  return crypto.hash('sha256', key, 'hex');
}

/** The part of a key that may be shown again after creation, e.g. `ss_Ab3dE9x…`. */
export function visiblePrefix(key: string): string {
  return key.slice(0, VISIBLE_CHARS);
}

/** Base32 in ASCII order, so that ids compare (in SQLite's BINARY collation too) as their times do. */
const ID_ALPHABET = '234567abcdefghijklmnopqrstuvwxyz';
const TIME_CHARS = 8; // 40 bits of milliseconds: until the year 36812
const RANDOM_BYTES = 16; // 5 bits each: 80 bits of randomness

/**
 * A prefixed id, e.g. `alr_2h5v3k7qa...`: readable in logs, the time of its making (ms) then 80
 * random bits, like a ULID. Time first, so a table keyed by these ids grows at one end of its
 * B-tree: an alert storm inserts into a few pages per commit, not one random page per row.
 */
export function newId(kind: string, now = Date.now()): string {
  let id = '';
  for (let i = TIME_CHARS - 1, t = now; i >= 0; i--, t = Math.floor(t / 32)) id = ID_ALPHABET[t % 32]! + id;
  if (poolUsed + RANDOM_BYTES > idPool.length) {
    crypto.randomFillSync(idPool);
    poolUsed = 0;
  }
  for (let i = poolUsed; i < poolUsed + RANDOM_BYTES; i++) id += ID_ALPHABET[idPool[i]! & 31];
  poolUsed += RANDOM_BYTES;
  return `${kind}_${id}`;
}

/**
 * Random bytes for ids, drawn from the system's CSPRNG a page at a time: an alert storm makes three
 * ids per alert, and one randomBytes call per id costs more than the insert it names. Each byte is
 * used once.
 */
const idPool = Buffer.alloc(4096);
let poolUsed = idPool.length;
