/**
 * What a key may do. `ingest`: send records. `read`: every GET and the SDK's queries. `admin`:
 * everything, changes included. `approve`: approve or deny authorizations waiting for a person
 * (with read, to see them). An agent needs ingest (and read for the SDK's queries); a dashboard or
 * a BI job needs read; a person who only approves, read and approve.
 */
export const SCOPES = ['ingest', 'read', 'admin', 'approve'] as const;
export type Scope = (typeof SCOPES)[number];

/** A key's own rates; null takes the service default (RATE_LIMIT_*_PER_SECOND). */
export interface KeyRates {
  requestsPerSecond: number | null;
  recordsPerSecond: number | null;
}

/** The team an API key authenticates, and which key it was. */
export interface KeyOwner {
  teamId: string;
  teamName: string;
  keyId: string;
  keyName: string;
  /**
   * The first key of this key's rotation chain (its own id unless it was issued by a rotation):
   * rate buckets belong to it, so rotating a key does not refill them.
   */
  holderId: string;
  scopes: Scope[];
  /** The key's own rate limits (null: the service's defaults). */
  rates: KeyRates;
  /** The operator suspended the team: every interface answers its keys 403 team_suspended. */
  suspended: boolean;
}

/** Whether a key may use what needs this scope: admin may use everything. */
export const allows = (owner: KeyOwner, scope: Scope) => owner.scopes.includes('admin') || owner.scopes.includes(scope);
