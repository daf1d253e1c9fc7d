import type { AuthedContext } from '../http/routes.js';
import { recordChange } from './repository.js';

/** What a handler says about the change it made; who, when and which route come from the request. */
export interface ChangeSpec {
  action: string;
  resourceType: 'key' | 'agent' | 'policy' | 'alert' | 'webhook';
  resourceId: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

/**
 * Makes a change and records it in the management audit log, in one SQLite transaction: `change`
 * runs inside it and returns its result with what the log should say (or undefined: no change,
 * nothing recorded). A change that throws records nothing.
 */
export function audited<T>(ctx: AuthedContext<unknown, unknown>, change: () => { result: T; log?: ChangeSpec }): T {
  const db = ctx.deps.registry;
  return db
    .transaction(() => {
      const { result, log } = change();
      if (log) {
        recordChange(db, ctx.team.teamId, {
          ...log,
          keyId: ctx.team.keyId,
          keyName: ctx.team.keyName,
          requestId: ctx.requestId,
          method: ctx.method,
          route: ctx.route,
        });
      }
      return result;
    })
    .immediate();
}
