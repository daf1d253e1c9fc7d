import { ApiError } from './errors.js';

/**
 * Page cursors are opaque to clients: base64url JSON of where the page ended, so the next page
 * starts strictly after it (keyset pagination: no duplicates or gaps while rows are added).
 */
export function encodeCursor(position: unknown): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

/** Decodes a cursor made by encodeCursor and checks its shape; anything else is a 400 naming `cursor`. */
export function decodeCursor<T>(cursor: string, isPosition: (value: unknown) => value is T): T {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  // NUL is in no stored value, and PostgreSQL refuses it in a parameter (a 500): no position holds one.
  if (!isPosition(value) || JSON.stringify(value).includes('\\u0000')) {
    throw new ApiError('validation_failed', 'Query string is invalid: cursor is not a cursor this API returned', [
      { field: 'cursor', message: 'is not a cursor this API returned' },
    ]);
  }
  return value;
}

/**
 * A page of a keyset listing. `fetch` is asked for one row more than the page holds: that row
 * tells whether another page exists; the cursor is the position of the page's last row.
 */
export async function keysetPage<Row>(
  limit: number,
  fetch: (rows: number) => Row[] | Promise<Row[]>,
  position: (last: Row) => unknown,
): Promise<{ rows: Row[]; next_cursor: string | null }> {
  const fetched = await fetch(limit + 1);
  const rows = fetched.slice(0, limit);
  const last = rows.at(-1);
  return { rows, next_cursor: fetched.length > limit && last !== undefined ? encodeCursor(position(last)) : null };
}

/** The position of a list paged by an increasing sequence number (audit log, webhook deliveries). */
export const isSeqPosition = (v: unknown): v is { seq: number } =>
  typeof v === 'object' && v !== null && Number.isSafeInteger((v as { seq: unknown }).seq);
