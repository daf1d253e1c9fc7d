/** A 32-byte AES-256 key, and where it came from (for error messages: the variable or the file). */
export interface SecretsKey {
  bytes: Buffer;
  source: string;
}

/** The keys of the secrets at rest as configured: SECRETS_KEY(_FILE) and SECRETS_KEY_PREVIOUS(_FILE). */
export interface SecretsKeys {
  /** Undefined: DATA_DIR/secrets.key, generated at first start. */
  current: SecretsKey | undefined;
  /** Accepted for opening values only, during a rotation. */
  previous: SecretsKey | undefined;
}

/** The bytes of a key written as `openssl rand -base64 32` writes it, or undefined for anything else. */
export function parseKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]{43}=$/.test(trimmed)) return undefined;
  return Buffer.from(trimmed, 'base64');
}
