/**
 * The dashboard's only way to the service: the public API under /api/v1, with the session's key.
 * Failures arrive in the API's one error shape and become an ApiError carrying its field errors, so
 * a form can show each next to its field.
 */
import { currentSession, forgetSession } from './session';

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: FieldError[] = [],
  ) {
    super(message);
  }
  /**
   * The message for one field (a form shows it beside the input), if the API named it or a part of
   * it: `agents` also takes `agents[2]` (unless `exact`: a list's own message, not its items').
   */
  fieldMessage(field: string, exact = false): string | undefined {
    return this.fields.find((f) => f.field === field || (!exact && f.field.startsWith(`${field}[`)))?.message;
  }
}

/** Any failure as an ApiError, so a form has one kind of error to show. */
export function asApiError(err: unknown): ApiError {
  return err instanceof ApiError ? err : new ApiError(0, 'unknown', (err as Error).message);
}

/** Called when the key stops working (revoked or expired while signed in). */
let onUnauthorized: () => void = () => {};
export function whenUnauthorized(handler: () => void): void {
  onUnauthorized = handler;
}

export type Query = Record<string, string | number | undefined | null>;

export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export async function api<T>(method: string, path: string, options: { query?: Query; body?: unknown; apiKey?: string; signal?: AbortSignal } = {}): Promise<T> {
  const apiKey = options.apiKey ?? currentSession()?.apiKey;
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(withQuery(`/api/v1${path}`, options.query), {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'The service could not be reached. Check that it is running.');
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (res.ok) return body as T;
  const error = (body as { error?: { code?: string; message?: string; details?: unknown } } | undefined)?.error;
  const fields = Array.isArray(error?.details)
    ? (error.details as unknown[]).filter((d): d is FieldError => typeof (d as FieldError)?.field === 'string')
    : [];
  const failure = new ApiError(res.status, error?.code ?? 'http_' + res.status, error?.message ?? `The service answered ${res.status}.`, fields);
  if (res.status === 401 && !options.apiKey) {
    forgetSession();
    onUnauthorized();
  }
  throw failure;
}

/** A page of a cursor-paginated list. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}
