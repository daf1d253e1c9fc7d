import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseKey, type SecretsKey, type SecretsKeys } from '../domain/secrets-key.js';

export { parseKey, type SecretsKey, type SecretsKeys };

/** The key generated at first start when none is given from outside, kept in DATA_DIR. */
export const GENERATED_KEY_FILE = 'secrets.key';

/** A stored value that cannot be opened: changed, moved from another row, or sealed under a key not given. */
export class SealedValueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealedValueError';
  }
}

/** The keys given cannot open what the registry holds; the message names the variable to fix. */
export class SecretsKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretsKeyError';
  }
}

const FORMAT = 'enc:v1:';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** Which key sealed a value, without the key: 8 hex digits of its SHA-256 (a wrong key is named, not guessed at). */
export const keyId = (bytes: Buffer) => crypto.createHash('sha256').update(bytes).digest('hex').slice(0, 8);


interface KnownKey {
  id: string;
  bytes: Buffer;
  source: string;
}

/**
 * Seals secrets for the registry with AES-256-GCM: a random 12-byte nonce per value, stored as
 * `enc:v1:<key id>:<base64 of nonce | ciphertext | tag>`. The `context` (which row and column)
 * is authenticated with it, so a value copied to another row or column does not open.
 */
export class SecretBox {
  readonly #current: KnownKey;
  readonly #previous: KnownKey | undefined;

  constructor(current: SecretsKey, previous?: SecretsKey) {
    this.#current = { id: keyId(current.bytes), bytes: Buffer.from(current.bytes), source: current.source };
    const previousId = previous && keyId(previous.bytes);
    // The same key given twice is one key, not a rotation.
    this.#previous = previous && previousId !== this.#current.id ? { id: previousId!, bytes: Buffer.from(previous.bytes), source: previous.source } : undefined;
  }

  get currentKeyId(): string {
    return this.#current.id;
  }

  /** Where the current key came from: SECRETS_KEY, SECRETS_KEY_FILE or DATA_DIR/secrets.key. */
  get currentKeySource(): string {
    return this.#current.source;
  }

  /** The current key, for the webhook sender's thread (handed over in workerData, never the environment). */
  currentKey(): SecretsKey {
    return { bytes: Buffer.from(this.#current.bytes), source: this.#current.source };
  }

  seal(value: string, context: string): string {
    const nonce = crypto.randomBytes(NONCE_BYTES);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.#current.bytes, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const sealed = Buffer.concat([nonce, cipher.update(value, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${FORMAT}${this.#current.id}:${sealed.toString('base64')}`;
  }

  /** The value sealed for `context`; SealedValueError when it is not a sealed value, was changed or moved, or its key is not given. */
  open(stored: string, context: string): string {
    const parsed = parse(stored);
    if (!parsed) throw new SealedValueError(`${context}: not an encrypted value`);
    const key = [this.#current, this.#previous].find((k) => k?.id === parsed.keyId);
    if (!key) throw new SealedValueError(`${context}: encrypted under key ${parsed.keyId}, which is not among the keys given (${this.keysGiven()})`);
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', key.bytes, parsed.nonce);
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(parsed.tag);
      return Buffer.concat([decipher.update(parsed.ciphertext), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedValueError(`${context}: the encrypted value failed its integrity check (changed, or copied from another row)`);
    }
  }

  /** What a stored value is: sealed under the current key, the previous one, another one, or in clear (stored before encryption). */
  sealedUnder(stored: string): 'current' | 'previous' | 'unknown' | 'clear' {
    if (!stored.startsWith('enc:')) return 'clear';
    const parsed = parse(stored);
    if (parsed?.keyId === this.#current.id) return 'current';
    if (parsed && parsed.keyId === this.#previous?.id) return 'previous';
    return 'unknown';
  }

  /** "SECRETS_KEY (key 1a2b3c4d), SECRETS_KEY_PREVIOUS (key 5e6f7a8b)": for error messages. */
  keysGiven(): string {
    return [this.#current, this.#previous]
      .filter((k): k is KnownKey => k !== undefined)
      .map((k) => `${k.source} (key ${k.id})`)
      .join(', ');
  }
}

function parse(stored: string): { keyId: string; nonce: Buffer; ciphertext: Buffer; tag: Buffer } | undefined {
  const match = /^enc:v1:([0-9a-f]{8}):([A-Za-z0-9+/]+={0,2})$/.exec(stored);
  if (!match) return undefined;
  const sealed = Buffer.from(match[2]!, 'base64');
  if (sealed.length < NONCE_BYTES + TAG_BYTES) return undefined;
  return {
    keyId: match[1]!,
    nonce: sealed.subarray(0, NONCE_BYTES),
    ciphertext: sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES),
    tag: sealed.subarray(sealed.length - TAG_BYTES),
  };
}

/**
 * The SecretBox of this process: the key from SECRETS_KEY(_FILE), or else DATA_DIR/secrets.key,
 * generated (mode 0600) at first start. Takes the keys out of `keys` (the config): from here on
 * only the box holds them.
 */
export function openSecretBox(keys: SecretsKeys, dataDir: string): SecretBox {
  const current = keys.current ?? generatedKey(dataDir);
  const box = new SecretBox(current, keys.previous);
  keys.current = undefined;
  keys.previous = undefined;
  return box;
}

function generatedKey(dataDir: string): SecretsKey {
  const file = path.join(dataDir, GENERATED_KEY_FILE);
  const source = file;
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    // wx: two processes starting at once cannot both write a key; the second reads the first's.
    fs.writeFileSync(file, `${crypto.randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new SecretsKeyError(`SECRETS_KEY: none given, and ${file} cannot be written (${(err as Error).message})`);
  }
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new SecretsKeyError(`SECRETS_KEY: none given, and ${file} cannot be read (${(err as Error).message})`);
  }
  const bytes = parseKey(text);
  if (!bytes) throw new SecretsKeyError(`SECRETS_KEY: none given, and ${file} does not hold the base64 of 32 bytes`);
  return { bytes, source };
}
