import type { ServerResponse } from 'node:http';

/**
 * Answers written with Node's own response methods, as express's res.json and res.send write them
 * (the same status, Content-Type with charset, Content-Length, no body for HEAD, 204 and 304), so
 * that a route answers alike whether express or the fast lane (fast-lane.ts) served it.
 */

/** Sets each header of `headers` (express's res.set for a plain object). */
export function setHeaders(res: ServerResponse, headers: Record<string, string>): void {
  for (const name in headers) res.setHeader(name, headers[name]!);
}

/** A JSON answer: `body` serialised once. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  // JSON.stringify(undefined) is undefined: an empty answer, as express sends it.
  send(res, status, JSON.stringify(body) ?? '');
}

/** A text answer of the given type; a text type without a charset is sent as UTF-8. */
export function sendText(res: ServerResponse, status: number, contentType: string, content: string): void {
  res.setHeader('Content-Type', /;\s*charset=/i.test(contentType) ? contentType : `${contentType}; charset=utf-8`);
  send(res, status, content);
}

function send(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  if (status === 204 || status === 304) {
    res.removeHeader('Content-Type');
    res.removeHeader('Content-Length');
    res.end();
    return;
  }
  res.setHeader('Content-Length', Buffer.byteLength(text));
  if (res.req?.method === 'HEAD') res.end();
  else res.end(text);
}
