/**
 * An authorization asked for, as it is decided (./decide.ts, inside the ingest log's group
 * commit), and what it comes to.
 */
import type { AuthorizationRow } from './repository.js';

export interface AuthorizationRequest {
  teamId: string;
  agentId: string;
  endpoint: string;
  /** Host of the endpoint, lower case (as ingest derives it). */
  domain: string;
  amount: string;
  asset: string | null;
  network: string | null;
  payeeAddress: string | null;
  /** As a record to the endpoint would be classified (its category field, a known tag, the domain). */
  category: string;
  tags: string[];
  expiresInS: number;
  idempotencyKey: string | null;
}

/**
 * The authorization written (or found by its idempotency key); or its totals could not be read
 * (the event store behind or down); or deciding it failed (a bug: a 500 for that request alone).
 */
export type AuthorizationOutcome = { row: AuthorizationRow } | { unavailable: true } | { failed: unknown };

export const DEFAULT_EXPIRES_IN_S = 300;
