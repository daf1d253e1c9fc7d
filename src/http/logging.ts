import crypto from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { pinoHttp, type HttpLogger } from 'pino-http';
import type { KeyOwner } from '../domain/keys.js';

/** A client-supplied request id is kept when it is short and plain, so traces join up. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function withTeam(res: ServerResponse, line: Record<string, unknown>): Record<string, unknown> {
  const team = (res as unknown as { locals?: { team?: KeyOwner } }).locals?.team;
  if (team) line.teamId = team.teamId;
  return line;
}

/**
 * One log line per request: method, path, status, duration, team and request id. The serializers
 * are an allowlist of the request's fields: headers are never serialised, so `Authorization` and
 * cookies cannot reach the logs, and no redaction pass runs over every line for paths never there.
 * The request id goes back to the client in `X-Request-Id`.
 */
export function requestLogger(logger: Logger): HttpLogger {
  return pinoHttp({
    logger,
    genReqId(req: IncomingMessage, res: ServerResponse) {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : crypto.randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    // The team goes into the line itself, not into a child logger made per answer (which costs
    // about as much as the rest of the line).
    customSuccessObject: (_req, res, line) => withTeam(res, line),
    customErrorObject: (_req, res, _err, line) => withTeam(res, line),
    customLogLevel(_req, res, err) {
      return err || res.statusCode >= 500 ? 'error' : 'info';
    },
    // Ours read the request itself: pino-http's wrapping would first copy it into pino's standard
    // shape (headers, address and all) on every request, to keep three fields of it.
    wrapSerializers: false,
    serializers: {
      req: (req: { id: unknown; method: string; url: string; originalUrl?: string }) => ({
        id: req.id,
        method: req.method,
        // Express rewrites req.url under a mounted router; originalUrl is what the client asked.
        path: (req.originalUrl ?? req.url).split('?')[0],
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  });
}
