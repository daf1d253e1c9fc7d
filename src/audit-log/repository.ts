import crypto from 'node:crypto';
import type { Sql } from '../stores/sql.js';

/** One field's change: absent before (a creation) or after (a deletion) reads as null. */
export interface FieldChange {
  before: unknown;
  after: unknown;
}

/** A change made through the management API, as recorded. */
export interface ManagementChange {
  id: string;
  at: number;
  keyId: string;
  keyName: string;
  requestId: string;
  method: string;
  route: string;
  action: string;
  resourceType: string;
  resourceId: string;
  changes: Record<string, FieldChange>;
}

export type NewChange = Omit<ManagementChange, 'id' | 'at' | 'changes'> & {
  /** The resource's fields before and after, as the API shows them; null when it did not exist. */
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  /** Fields that changed behind a mask: recorded though their shown values are equal. */
  maskedChanges?: readonly string[];
};

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The fields whose values differ, and those in `masked`, each with its value before and after. */
export function changedFields(before: Record<string, unknown> | null, after: Record<string, unknown> | null, masked: readonly string[] = []): Record<string, FieldChange> {
  const changes: Record<string, FieldChange> = {};
  for (const field of new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])) {
    const b = before?.[field] ?? null;
    const a = after?.[field] ?? null;
    if (!same(b, a) || masked.includes(field)) changes[field] = { before: b, after: a };
  }
  return changes;
}

/**
 * Appends a change to the team's management audit log. Call it inside the transaction that makes
 * the change: the record and the change commit together, or neither does.
 */
export async function recordChange(sql: Sql, teamId: string, change: NewChange, at = Date.now()): Promise<void> {
  const { before, after, maskedChanges, ...who } = change;
  await sql.run(
    `INSERT INTO management_audit (id, team_id, at, key_id, key_name, request_id, method, route, action, resource_type, resource_id, changes)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      `chg_${crypto.randomBytes(10).toString('base64url')}`,
      teamId,
      at,
      who.keyId,
      who.keyName,
      who.requestId,
      who.method,
      who.route,
      who.action,
      who.resourceType,
      who.resourceId,
      JSON.stringify(changedFields(before, after, maskedChanges)),
    ],
  );
}

interface ChangeRow {
  seq: number;
  id: string;
  at: number;
  key_id: string;
  key_name: string;
  request_id: string;
  method: string;
  route: string;
  action: string;
  resource_type: string;
  resource_id: string;
  changes: string;
}

export interface ChangeFilter {
  limit: number;
  /** The seq of the last change of the previous page: this page starts before it. */
  beforeSeq?: number;
  resourceType?: string;
  resourceId?: string;
  keyId?: string;
}

/** A team's changes, newest first, with the position each page ends at. */
export async function listChanges(sql: Sql, teamId: string, filter: ChangeFilter): Promise<(ManagementChange & { seq: number })[]> {
  const where = ['team_id = ?'];
  const params: unknown[] = [teamId];
  if (filter.beforeSeq !== undefined) (where.push('seq < ?'), params.push(filter.beforeSeq));
  if (filter.resourceType !== undefined) (where.push('resource_type = ?'), params.push(filter.resourceType));
  if (filter.resourceId !== undefined) (where.push('resource_id = ?'), params.push(filter.resourceId));
  if (filter.keyId !== undefined) (where.push('key_id = ?'), params.push(filter.keyId));
  const rows = await sql.all<ChangeRow>(`SELECT * FROM management_audit WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`, [...params, filter.limit]);
  return rows.map((r) => ({
    seq: r.seq,
    id: r.id,
    at: r.at,
    keyId: r.key_id,
    keyName: r.key_name,
    requestId: r.request_id,
    method: r.method,
    route: r.route,
    action: r.action,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    changes: JSON.parse(r.changes) as Record<string, FieldChange>,
  }));
}
