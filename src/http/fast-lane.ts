import type { IncomingMessage, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';

/**
 * Routes whose path has no parameter, served without express: an exact look-up of method and path,
 * then the route's own middleware and handler, the same functions express runs for it (they use
 * only Node's request and response, src/http/respond.ts). Express's router walks every layer and
 * swaps the prototypes of each request and response, which leaves property look-ups megamorphic
 * everywhere: an authorization or an ingest batch would pay that on every call.
 *
 * Anything not matched exactly (another case, a trailing slash, a path with parameters, HEAD,
 * OPTIONS, a 405) goes to express as before, which answers it as it always did.
 */
/** Whether a route path has no parameter or pattern: the only paths the lane serves. */
export const isFixedPath = (path: string) => !/[:*(]/.test(path);

export class FastLane {
  private readonly routes = new Map<string, { route: string; chain: RequestHandler[] }>();

  constructor(
    /** What the app runs before any route (request log, metrics, CORS), in express's order. */
    private readonly prelude: readonly RequestHandler[],
    /** The app's last middleware: every error in the one shape. */
    private readonly onError: ErrorRequestHandler,
  ) {}

  /** A route served by `chain` at exactly `path` (no parameters) for `method`. */
  add(method: string, path: string, chain: RequestHandler[]): void {
    if (!isFixedPath(path)) throw new Error(`the fast lane serves fixed paths only, not ${path}`);
    this.routes.set(`${method.toUpperCase()} ${path}`, { route: path, chain: [...this.prelude, ...chain] });
  }

  /** Serves the request and returns true when it is one of the lane's routes; false leaves it to express. */
  serve(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url ?? '';
    const mark = url.indexOf('?');
    const found = this.routes.get(`${req.method} ${mark < 0 ? url : url.slice(0, mark)}`);
    if (!found) return false;
    // What express gives each request and that the route's middleware reads.
    const request = req as Request;
    const response = res as Response;
    response.locals = Object.create(null) as Response['locals'];
    // The parser express uses here ('query parser': 'simple').
    Object.defineProperty(request, 'query', { value: mark < 0 ? {} : querystring.parse(url.slice(mark + 1)), writable: true, configurable: true, enumerable: true });
    request.params = {};
    // The metrics name an answer by its route pattern (countRequests).
    (request as { route?: unknown }).route = { path: found.route };
    const chain = found.chain;
    let at = 0;
    const fail = (err: unknown) => {
      // As express: an error after the answer began can only end the connection.
      this.onError(err, request, response, () => res.destroy());
    };
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null) return fail(err);
      const handler = chain[at++];
      if (!handler) return fail(new Error(`no handler answered ${found.route}`));
      try {
        const result: unknown = handler(request, response, next);
        // express 5: a handler's rejected promise goes to the error handler.
        if (result instanceof Promise) result.catch((e: unknown) => fail(e ?? new Error('Rejected promise')));
      } catch (e) {
        fail(e);
      }
    };
    next();
    return true;
  }
}
