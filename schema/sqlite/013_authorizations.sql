-- Authorizations: "may this agent pay this?" asked before paying. An approved one holds its amount
-- against the agent's windows until it is captured, voided or expires; a declined one holds nothing.
-- Written in the ingest log's group commit, so decisions and records share one set of running totals.
CREATE TABLE authorizations (
  id               TEXT PRIMARY KEY,
  team_id          TEXT NOT NULL REFERENCES teams (id),
  agent_id         TEXT NOT NULL,
  endpoint         TEXT NOT NULL,
  domain           TEXT NOT NULL,
  amount           TEXT NOT NULL,          -- decimal string, as asked
  asset            TEXT,
  network          TEXT,
  payee_address    TEXT,
  decision         TEXT NOT NULL CHECK (decision IN ('approved', 'declined')),
  -- held until captured or voided; an approved row past expires_at reads as expired (nothing is
  -- written when a hold lapses: the time says it).
  state            TEXT NOT NULL CHECK (state IN ('held', 'captured', 'voided', 'declined')),
  checks           TEXT NOT NULL,          -- JSON: the limits looked at, with spent, held, remaining
  reasons          TEXT NOT NULL,          -- JSON array of strings
  idempotency_key  TEXT,
  created_at       INTEGER NOT NULL,
  expires_at       INTEGER NOT NULL,
  captured_amount  TEXT,
  captured_at      INTEGER,
  captured_by      TEXT,                   -- the record id that captured it, or 'api'
  voided_at        INTEGER
);
CREATE UNIQUE INDEX authorizations_idempotency ON authorizations (team_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX authorizations_team_created ON authorizations (team_id, created_at DESC, id DESC);
CREATE INDEX authorizations_team_agent ON authorizations (team_id, agent_id, created_at DESC);
-- Holds still counting at start-up are read back by this.
CREATE INDEX authorizations_held ON authorizations (expires_at) WHERE state = 'held';
