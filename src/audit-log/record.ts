import type { AuthedContext } from '../http/routes.js';
import type { Sql } from '../stores/sql.js';
import { recordChange } from './repository.js';

/** What a handler says about the change it made; who, when and which route come from the request. */
export interface ChangeSpec {
  action: string;
  resourceType: 'key' | 'agent' | 'policy' | 'alert' | 'webhook' | 'team' | 'rate';
  resourceId: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  /** Fields that changed behind a mask (a credential in a URL): recorded though they show the same before and after. */
  maskedChanges?: readonly string[];
}

/**
 * Makes a change and records it in the management audit log, in one transaction: `change` runs
 * inside it and returns its result with what the log should say (or undefined: no change, nothing
 * recorded). A change that throws records nothing. `change` gets the transaction; a store not yet
 * moved to it uses `deps.registry` synchronously, which on SQLite is the same open transaction.
 */
export async function audited<T>(
  ctx: AuthedContext<unknown, unknown>,
  change: (sql: Sql) => Promise<{ result: T; log?: ChangeSpec }> | { result: T; log?: ChangeSpec },
): Promise<T> {
  return ctx.deps.db.transaction(async (sql) => {
    const { result, log } = await change(sql);
    if (log) {
      await recordChange(sql, ctx.team.teamId, {
        ...log,
        keyId: ctx.team.keyId,
        keyName: ctx.team.keyName,
        requestId: ctx.requestId,
        method: ctx.method,
        route: ctx.route,
      });
    }
    return result;
  });
}
