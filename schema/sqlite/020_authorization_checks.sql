-- The checks of decision and state as comparisons, not IN lists: SQLite codes an IN list of more
-- than two constants as a temporary B-tree built on every execution of a statement that checks it,
-- so every decision's INSERT built two (about 4 µs each; docs/performance.md). The same values are
-- allowed. SQLite cannot change a CHECK constraint, so the table is rebuilt as it was.
CREATE TABLE authorizations_rebuilt (
  id               TEXT PRIMARY KEY,
  team_id          TEXT NOT NULL REFERENCES teams (id),
  agent_id         TEXT NOT NULL,
  endpoint         TEXT NOT NULL,
  domain           TEXT NOT NULL,
  amount           TEXT NOT NULL,
  asset            TEXT,
  network          TEXT,
  payee_address    TEXT,
  decision         TEXT NOT NULL CHECK (decision = 'approved' OR decision = 'declined' OR decision = 'pending'),
  state            TEXT NOT NULL CHECK (state = 'held' OR state = 'captured' OR state = 'voided' OR state = 'declined' OR state = 'pending'),
  checks           TEXT NOT NULL,
  reasons          TEXT NOT NULL,
  idempotency_key  TEXT,
  created_at       INTEGER NOT NULL,
  expires_at       INTEGER NOT NULL,
  captured_amount  TEXT,
  captured_at      INTEGER,
  captured_by      TEXT,
  voided_at        INTEGER,
  category         TEXT,
  tags             TEXT,
  hold_s           INTEGER,
  pending_until    INTEGER,
  decided_at       INTEGER,
  decided_by       TEXT,
  decision_note    TEXT
);
INSERT INTO authorizations_rebuilt (id, team_id, agent_id, endpoint, domain, amount, asset, network, payee_address, decision, state, checks, reasons,
                                    idempotency_key, created_at, expires_at, captured_amount, captured_at, captured_by, voided_at, category, tags,
                                    hold_s, pending_until, decided_at, decided_by, decision_note)
  SELECT id, team_id, agent_id, endpoint, domain, amount, asset, network, payee_address, decision, state, checks, reasons,
         idempotency_key, created_at, expires_at, captured_amount, captured_at, captured_by, voided_at, category, tags,
         hold_s, pending_until, decided_at, decided_by, decision_note FROM authorizations ORDER BY rowid;
DROP TABLE authorizations;
ALTER TABLE authorizations_rebuilt RENAME TO authorizations;
CREATE UNIQUE INDEX authorizations_idempotency ON authorizations (team_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX authorizations_team_created ON authorizations (team_id, created_at DESC, id DESC);
CREATE INDEX authorizations_team_agent ON authorizations (team_id, agent_id, created_at DESC);
-- Holds still counting (held, or pending a person) are read back at start-up by this.
CREATE INDEX authorizations_live ON authorizations (expires_at) WHERE state IN ('held', 'pending');
-- Pending ones whose wait has ended: the sweep that writes them declined.
CREATE INDEX authorizations_pending ON authorizations (expires_at) WHERE state = 'pending';
