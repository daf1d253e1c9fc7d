-- Authorizations, the running totals that evaluation and authorizations read, and the policy
-- revision that tells instances their policies changed (src/evaluation/evaluator.ts).

-- As schema/sqlite/013. An approved one holds its amount until captured, voided or expired; what
-- an agent holds is summed from its live rows, read after its totals are locked, so holds need no
-- counter of their own and expire by their time alone.
CREATE TABLE authorizations (
  id               text PRIMARY KEY,
  team_id          text NOT NULL REFERENCES teams (id),
  agent_id         text NOT NULL,
  endpoint         text NOT NULL,
  domain           text NOT NULL,
  amount           text NOT NULL,          -- decimal string, as asked
  asset            text,
  network          text,
  payee_address    text,
  decision         text NOT NULL CHECK (decision IN ('approved', 'declined')),
  state            text NOT NULL CHECK (state IN ('held', 'captured', 'voided', 'declined')),
  checks           text NOT NULL,
  reasons          text NOT NULL,
  idempotency_key  text,
  created_at       bigint NOT NULL,
  expires_at       bigint NOT NULL,
  captured_amount  text,
  captured_at      bigint,
  captured_by      text,
  voided_at        bigint
);
CREATE UNIQUE INDEX authorizations_idempotency ON authorizations (team_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX authorizations_team_created ON authorizations (team_id, created_at DESC, id DESC);
CREATE INDEX authorizations_team_agent ON authorizations (team_id, agent_id, created_at DESC);
CREATE INDEX authorizations_held ON authorizations (team_id, agent_id, expires_at) WHERE state = 'held';

-- Running totals, one row per (team, scope, subject, window): what records of that window added up
-- to, in units of 10^-18. Every acknowledging transaction and every decision takes the rows it
-- reads FOR UPDATE, in primary-key order, so instances count one after the other and never
-- deadlock. Keyed for more than today needs: scope 'agent' (subject: the agent id) is today's;
-- budgets pooled across agents add scope 'pool' (subject: the policy id), and weekly, monthly or
-- filtered windows add window kinds, not tables. window_kind is the evaluator's scope string:
-- 'h' (UTC hour), 'd:<zone>' (day in a zone), 'e:<pattern>' (UTC day, per endpoint pattern).
CREATE TABLE spend_totals (
  team_id       text NOT NULL,
  scope         text NOT NULL,
  subject       text NOT NULL,
  window_kind   text NOT NULL,
  window_start  bigint NOT NULL,   -- Unix ms
  window_end    bigint NOT NULL,   -- Unix ms: rows of windows long over are pruned
  -- NULL only inside the transaction that makes the row for a window that began before its scope
  -- was tracked: it fills it from ClickHouse under the row's lock, so NULL is never committed.
  spent         numeric(40, 0),
  PRIMARY KEY (team_id, scope, subject, window_kind, window_start)
);
CREATE INDEX spend_totals_by_end ON spend_totals (window_end);

ALTER TABLE teams ADD COLUMN policy_revision bigint NOT NULL DEFAULT 0;
