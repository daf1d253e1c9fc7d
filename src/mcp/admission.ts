/**
 * What the tool calls of one POST /mcp cost, counted and taken before any of them runs: each call
 * costs what its route costs over HTTP (a token of the key's requests bucket; a tool that sends a
 * record, one of its records bucket too). A batch is admitted call by call in its order: the calls
 * the buckets hold run, and from the first one they do not, every later call of the batch is
 * answered `rate_limited` without running. A request carrying no tool call (initialize, tools/list,
 * notifications) costs one request token, as any other request.
 */
import type { RequestHandler, Response } from 'express';
import { ApiError } from '../http/errors.js';
import { setHeaders } from '../http/respond.js';
import type { McpDeps } from './deps.js';
import { limitRequests, rateLimited, rateLimitHeaders } from '../limits/http.js';
import type { LimitKind, LimitOutcome } from '../limits/rate-limiter.js';
import type { KeyOwner } from '../domain/keys.js';

/** The most messages a batch carries: the MCP SDK's transport refuses more, and they are refused before any is counted. */
export const MAX_BATCH_MESSAGES = 100;

/** A tools/call request of a body: its JSON-RPC id and the tool it names (not yet checked). */
export interface ToolCallMessage {
  id: string | number;
  name: unknown;
}

/** The tools/call requests of a parsed JSON-RPC body (one message or a batch), in their order. */
export function toolCallsOf(body: unknown): ToolCallMessage[] {
  const calls: ToolCallMessage[] = [];
  for (const message of Array.isArray(body) ? body : [body]) {
    if (message === null || typeof message !== 'object') continue;
    const { method, id, params } = message as { method?: unknown; id?: unknown; params?: { name?: unknown } };
    if (method === 'tools/call' && (typeof id === 'string' || typeof id === 'number')) calls.push({ id, name: params?.name });
  }
  return calls;
}

/** A call let through, with what to give back if the service refuses it (a 503); or the 429 that answers it. */
export type Admission = { admitted: true; refund(): void } | { admitted: false; refusal: ApiError };

/** The admissions of one request's calls, by JSON-RPC id. */
export class CallAdmissions {
  private readonly byId = new Map<string, Admission[]>();

  add(id: string | number, admission: Admission): void {
    const key = idKey(id);
    const list = this.byId.get(key);
    if (list) list.push(admission);
    else this.byId.set(key, [admission]);
  }

  /** The admission of the next call with this id: a batch may repeat an id, whose calls come in their order. */
  next(id: string | number): Admission | undefined {
    return this.byId.get(idKey(id))?.shift();
  }
}

// 1 and "1" are different JSON-RPC ids.
const idKey = (id: string | number) => `${typeof id} ${id}`;

/**
 * Takes the tokens of every call, in order, before any runs. Returns the admissions and the last
 * outcome of the requests bucket (for the answer's RateLimit headers).
 */
export async function admitToolCalls(
  calls: readonly ToolCallMessage[],
  team: KeyOwner,
  deps: Pick<McpDeps, 'rateLimiter' | 'metrics'>,
  sendsRecord: (toolName: unknown) => boolean,
): Promise<{ admissions: CallAdmissions; requests: LimitOutcome | undefined }> {
  const { rateLimiter: limiter, metrics } = deps;
  const take = (kind: LimitKind) => limiter.take(team.holderId, kind, team.rates, 1);
  const giveBack = (kind: LimitKind) => void limiter.refund(team.holderId, kind, team.rates, 1);
  let requests: LimitOutcome | undefined;
  /** One call's tokens: a request's, and a record's when it sends one; none when either is refused. */
  const takeCall = async (sendsOne: boolean): Promise<{ refund: () => void } | { refused: LimitOutcome }> => {
    const request = await take('requests');
    requests = request ?? requests;
    if (request && !request.allowed) return { refused: request };
    const record = sendsOne ? await take('records') : undefined;
    if (record && !record.allowed) {
      if (request) giveBack('requests');
      return { refused: record };
    }
    return { refund: refunder(request !== undefined, record !== undefined, giveBack) };
  };
  const admissions = new CallAdmissions();
  let refused: LimitOutcome | undefined;
  for (const call of calls) {
    if (!refused) {
      const taken = await takeCall(sendsRecord(call.name));
      if ('refund' in taken) {
        admissions.add(call.id, { admitted: true, refund: taken.refund });
        continue;
      }
      refused = taken.refused;
    }
    admissions.add(call.id, { admitted: false, refusal: rateLimited(refused, metrics) });
  }
  return { admissions, requests };
}

/** Gives back, once, the tokens a call took. */
function refunder(request: boolean, record: boolean, giveBack: (kind: LimitKind) => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (request) giveBack('requests');
    if (record) giveBack('records');
  };
}

/** The admissions limitToolCalls put on the response, for the request's handler. */
export const admissionsOf = (res: Response): CallAdmissions => (res.locals.toolCalls as CallAdmissions | undefined) ?? new CallAdmissions();

/**
 * POST /mcp once its body is parsed: no tool call, one request token (429 when refused, as every
 * route); tool calls, their admissions (a refused call is answered by its tool error, not a 429,
 * so the calls admitted before it still run and a model reads the refusal).
 */
export function limitToolCalls(deps: McpDeps, sendsRecord: (toolName: unknown) => boolean): RequestHandler {
  const oneRequest = limitRequests(deps.rateLimiter, deps.metrics);
  return (req, res, next) => {
    if (Array.isArray(req.body) && req.body.length > MAX_BATCH_MESSAGES) {
      throw new ApiError('validation_failed', `A JSON-RPC batch carries at most ${MAX_BATCH_MESSAGES} messages, this one ${req.body.length}`, [
        { field: 'body', message: `has more than ${MAX_BATCH_MESSAGES} messages` },
      ]);
    }
    const calls = toolCallsOf(req.body);
    if (calls.length === 0) return oneRequest(req, res, next);
    admitToolCalls(calls, res.locals.team as KeyOwner, deps, sendsRecord).then(({ admissions, requests }) => {
      res.locals.toolCalls = admissions;
      if (requests) setHeaders(res, rateLimitHeaders(requests));
      next();
    }, next);
  };
}
