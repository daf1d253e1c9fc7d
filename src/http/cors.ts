import type { ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';

/**
 * Headers a browser client may send, and read from an answer, across origins. Mcp-Protocol-Version:
 * browser-based MCP clients send it on every request to /mcp after the first.
 */
const ALLOWED_HEADERS = 'Authorization, Content-Type, X-Request-Id, Mcp-Protocol-Version';
const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, RateLimit, RateLimit-Policy, Location, Allow, Server-Timing';

/** Adds Origin to Vary (the answer differs by origin), keeping what is there. */
function varyOnOrigin(res: ServerResponse): void {
  const vary = res.getHeader('Vary');
  const names = vary === undefined ? [] : String(vary).split(',').map((n) => n.trim());
  if (names.includes('*') || names.some((n) => n.toLowerCase() === 'origin')) return;
  res.setHeader('Vary', [...names.filter((n) => n !== ''), 'Origin'].join(', '));
}

/**
 * CORS for the origins of CORS_ORIGINS (none by default, `*` for any). Keys travel in the
 * Authorization header, never in cookies, so no credentials mode is needed and `*` is safe to offer.
 * A request from another origin gets no CORS headers, and the browser keeps the answer from it.
 * The preflight itself is answered by each route's OPTIONS handler (204 with Allow).
 */
export function cors(origins: readonly string[]): RequestHandler {
  const any = origins.includes('*');
  const allowed = new Set(origins);
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origins.length === 0 || origin === undefined) return next();
    if (!any) varyOnOrigin(res);
    if (!any && !allowed.has(origin)) return next();
    res.setHeader('Access-Control-Allow-Origin', any ? '*' : origin);
    res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, POST, PATCH, DELETE');
      res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      res.setHeader('Access-Control-Max-Age', '600');
    }
    next();
  };
}
