import { sharedStoreUnavailable } from '../stores/postgres.js';
import { eventStoreUnavailable } from '../stores/clickhouse.js';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { InvalidInput, Unavailable } from '../domain/errors.js';
import { sendJson, setHeaders } from './respond.js';

/** Every machine code an error response can carry, and its HTTP status: the one place they map. */
export const ERROR_STATUS = {
  invalid_json: 400,
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  team_suspended: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  rate_limited: 429,
  payload_too_large: 413,
  unsupported_media_type: 415,
  internal_error: 500,
  store_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** One field-level problem, as listed in `details` of a validation error. */
export interface FieldError {
  field: string;
  message: string;
}

/** An error that becomes a response in the one error shape. */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

/** `{"error": {"code", "message", "details"?, "requestId"}}`: the body of every error response. */
export function errorBody(code: ErrorCode, message: string, requestId: unknown, details?: unknown) {
  return { error: { code, message, ...(details === undefined ? {} : { details }), requestId: String(requestId) } };
}

/** Whether a body the strict JSON parser refused is valid JSON after all (null, a string, a number, a boolean). */
function isJsonScalar(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  try {
    const value: unknown = JSON.parse(body);
    return value === null || typeof value !== 'object';
  } catch {
    return false;
  }
}

/** The `type` of the error body-shape.ts throws from express.json's `verify`, carrying the ApiError to answer with. */
export const BODY_SHAPE_REFUSED = 'entity.shape.refused';

/** Errors raised by express.json (body-parser) carry a `type`; map the ones a client causes. */
function fromBodyParser(err: { type?: string; message?: string; body?: unknown; apiError?: unknown }, maxBodyBytes: number): ApiError | undefined {
  switch (err.type) {
    case BODY_SHAPE_REFUSED:
      return err.apiError instanceof ApiError ? err.apiError : undefined;
    case 'entity.parse.failed':
      // The strict parser refuses JSON that is not an object or array: valid JSON, the wrong shape.
      if (isJsonScalar(err.body)) {
        return new ApiError('validation_failed', 'Request body must be a JSON object', [{ field: 'body', message: 'must be a JSON object' }]);
      }
      return new ApiError('invalid_json', `Request body is not valid JSON: ${err.message ?? ''}`.trim(), [{ field: 'body', message: 'is not valid JSON' }]);
    case 'entity.too.large':
      return new ApiError('payload_too_large', `Request body is larger than ${maxBodyBytes} bytes`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError('unsupported_media_type', err.message ?? 'Unsupported body encoding');
    case 'request.aborted':
    case 'request.size.invalid':
      return new ApiError('invalid_json', 'Request body ended before its declared length', [{ field: 'body', message: 'ended before its declared length' }]);
    default:
      return undefined;
  }
}

/** The status codes a client error from express or a library may carry, and the code each becomes. */
const CLIENT_ERROR_CODES: Record<number, ErrorCode> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/**
 * Errors express itself raises for what a client sent: a path parameter with malformed
 * percent-encoding (`%zz`, `%ED%A0%80`: a lone surrogate) is a URIError with status 400.
 */
function fromExpress(err: { status?: unknown; message?: string }): ApiError | undefined {
  if (err instanceof URIError) {
    return new ApiError('validation_failed', 'The path has malformed percent-encoding', [{ field: 'path', message: 'has malformed percent-encoding' }]);
  }
  const status = typeof err.status === 'number' ? err.status : undefined;
  const code = status === undefined ? undefined : CLIENT_ERROR_CODES[status];
  if (!code) return undefined;
  return new ApiError(code, err.message ?? 'Bad request', code === 'validation_failed' ? [{ field: 'request', message: err.message ?? 'is invalid' }] : undefined);
}

/** The engine's own errors (src/domain/errors.ts) as answers: 503 to retry, or 400 naming the fields. */
export function fromDomain(err: unknown): ApiError | undefined {
  if (err instanceof Unavailable) {
    return new ApiError('store_unavailable', err.message, undefined, err.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(err.retryAfterSeconds) });
  }
  if (err instanceof InvalidInput) return new ApiError('validation_failed', err.message, err.details);
  return undefined;
}

/** Anything thrown that has a defined answer (an ApiError, a domain error, a store not answering); undefined: a bug. */
export function knownError(err: unknown): ApiError | undefined {
  return err instanceof ApiError ? err : (fromDomain(err) ?? fromStores(err));
}

/**
 * A store not answering now: PostgreSQL restarting or failing over, ClickHouse down, overloaded or
 * past a timeout. 503, and the client retries (logged, without a stack).
 */
export function fromStores(err: unknown): ApiError | undefined {
  if (sharedStoreUnavailable(err)) return new ApiError('store_unavailable', 'A store is not answering; retry shortly', undefined, { 'Retry-After': '2' });
  if (eventStoreUnavailable(err)) return new ApiError('store_unavailable', 'The event store is too busy to answer now; retry shortly', undefined, { 'Retry-After': '2' });
  return undefined;
}

/** The last middleware: turns anything thrown into the error shape; only 5xx are logged with a stack. */
export function errorHandler(maxBodyBytes: number): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) return next(err);
    const apiError =
      knownError(err) ?? fromBodyParser(err as { type?: string }, maxBodyBytes) ?? fromExpress(err as { status?: unknown });
    if (apiError) {
      // What the store said goes to the log, not to the client.
      if (apiError !== err && apiError.status >= 500) res.err = err as Error;
      setHeaders(res, apiError.headers);
      sendJson(res, apiError.status, errorBody(apiError.code, apiError.message, req.id, apiError.details));
      return;
    }
    // pino-http logs the request line at error level with this error and its stack.
    res.err = err as Error;
    sendJson(res, 500, errorBody('internal_error', 'Internal error; quote the request id when reporting it', req.id));
  };
}

/** No route matched the path. */
export const notFound: RequestHandler = (req, _res, next) => {
  next(new ApiError('not_found', `No route for ${req.method} ${req.path}`));
};

/** OPTIONS on a path that exists: 204 with `Allow` (and, for an allowed origin, the CORS preflight headers set by cors()). */
export function allowedMethods(allowed: string[]): RequestHandler {
  const methods = allowed.map((m) => m.toUpperCase());
  if (methods.includes('GET')) methods.push('HEAD');
  const allow = [...methods, 'OPTIONS'].join(', ');
  return (_req, res) => {
    res.setHeader('Allow', allow);
    res.status(204).end();
  };
}

/** The path exists but not with this method; `Allow` lists the ones it has. */
export function methodNotAllowed(allowed: string[]): RequestHandler {
  const allow = allowed.map((m) => m.toUpperCase()).join(', ');
  return (req, _res, next) => {
    // The path as sent: inside a router (/mcp) req.path is the part below where it is mounted.
    next(new ApiError('method_not_allowed', `${req.method} is not allowed on ${req.originalUrl.split('?')[0]}; use ${allow}`, undefined, { Allow: allow }));
  };
}
