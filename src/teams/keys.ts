import crypto from 'node:crypto';

/** Every generated key starts with this, so a leaked key is recognisable in a scanner. */
const KEY_PREFIX = 'ss_';
/** How many characters of a key are stored and shown in clear to tell keys apart. */
const VISIBLE_CHARS = 10;

/** A new random key: 32 random bytes (256 bits) in base64url behind the `ss_` prefix. */
export function generateApiKey(): string {
  return KEY_PREFIX + crypto.randomBytes(32).toString('base64url');
}

/** Keys are stored and looked up only by this hash. */
export function hashApiKey(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The part of a key that may be shown again after creation, e.g. `ss_Ab3dE9x…`. */
export function visiblePrefix(key: string): string {
  return key.slice(0, VISIBLE_CHARS);
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** A prefixed random id, e.g. `team_k3j...`: readable in logs, 100 bits of randomness. */
export function newId(kind: string): string {
  if (poolUsed + ID_BYTES > idPool.length) {
    crypto.randomFillSync(idPool);
    poolUsed = 0;
  }
  let id = '';
  for (let i = poolUsed; i < poolUsed + ID_BYTES; i++) id += ID_ALPHABET[idPool[i]! & 31];
  poolUsed += ID_BYTES;
  return `${kind}_${id}`;
}

const ID_BYTES = 20;
/**
 * Random bytes for ids, drawn from the system's CSPRNG a page at a time: an alert storm makes three
 * ids per alert, and one randomBytes call per id costs more than the insert it names. Each byte is
 * used once.
 */
const idPool = Buffer.alloc(4096);
let poolUsed = idPool.length;
