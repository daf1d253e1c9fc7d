-- Records checked against the chain (issue 63, docs/reconciliation.md). A settlement is one record
-- with a transaction hash as the chain showed it, or a transfer from an agent's wallet that no
-- record claimed (record_id NULL, status unreported). Agents' wallets, the transfers seen from them,
-- and each network's cursors live beside it. Alerts gain the type `settlement`: SQLite cannot change
-- a CHECK constraint, so alerts is rebuilt as it was with the wider check.

CREATE TABLE settlements (
  id                TEXT NOT NULL,             -- "r:" + record id, or "t:" + network + ":" + tx hash + ":" + log index: unique in the team
  team_id           TEXT NOT NULL REFERENCES teams (id),
  record_id         TEXT,                      -- NULL for an unreported transfer
  agent_id          TEXT NOT NULL,
  network           TEXT NOT NULL,             -- CAIP-2
  tx_hash           TEXT NOT NULL,             -- lower case
  status            TEXT NOT NULL CHECK (status IN ('pending', 'verified', 'mismatch', 'failed', 'not_found', 'unverifiable', 'unreported')),
  reported          TEXT NOT NULL,             -- JSON {amount, amount_raw, asset, token, payer, payee}; {} for a transfer
  observed          TEXT,                      -- JSON {amount, amount_raw, asset, token, payer, payee, block_number, block_hash}; NULL until seen
  differences       TEXT NOT NULL,             -- JSON array of {field, reported, observed}
  note              TEXT,                      -- why it is pending, unverifiable, or went back after a reorganisation
  block_number      INTEGER,                   -- of the transaction as last seen
  block_hash        TEXT,
  occurred_at       INTEGER NOT NULL,          -- Unix ms: the record's event time, or when the transfer was seen
  grace_from        INTEGER NOT NULL,          -- Unix ms: not_found once the grace period has passed since this
  checked_at        INTEGER,                   -- Unix ms of the last check; NULL before the first
  next_check_at     INTEGER NOT NULL,          -- Unix ms: when the verifier looks at it again
  mirrored          INTEGER NOT NULL DEFAULT 0, -- 1 once ClickHouse's copy (settlements, for BI) has this state
  created_at        INTEGER NOT NULL,
  PRIMARY KEY (team_id, id)
);
CREATE INDEX settlements_due ON settlements (network, next_check_at) WHERE status = 'pending';
CREATE INDEX settlements_recent ON settlements (network, block_number) WHERE status IN ('verified', 'mismatch', 'failed');
CREATE INDEX settlements_tx ON settlements (network, tx_hash);
CREATE INDEX settlements_team_tx ON settlements (team_id, tx_hash);
CREATE INDEX settlements_list ON settlements (team_id, occurred_at, id);
CREATE INDEX settlements_unmirrored ON settlements (team_id) WHERE mirrored = 0;

CREATE TABLE agent_wallets (
  team_id      TEXT NOT NULL REFERENCES teams (id),
  agent_id     TEXT NOT NULL,                  -- external id
  network      TEXT NOT NULL,                  -- CAIP-2
  address      TEXT NOT NULL,                  -- lower case
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (team_id, network, address)
);
CREATE INDEX agent_wallets_network ON agent_wallets (network, address);
CREATE INDEX agent_wallets_agent ON agent_wallets (team_id, agent_id);

-- Transfers from registered wallets, as seen past the confirmation depth; waiting for a record.
CREATE TABLE settlement_transfers (
  team_id       TEXT NOT NULL,
  network       TEXT NOT NULL,
  tx_hash       TEXT NOT NULL,
  log_index     INTEGER NOT NULL,
  agent_id      TEXT NOT NULL,
  token         TEXT NOT NULL,
  payer         TEXT NOT NULL,
  payee         TEXT NOT NULL,
  amount_raw    TEXT NOT NULL,
  block_number  INTEGER NOT NULL,
  block_hash    TEXT NOT NULL,
  seen_at       INTEGER NOT NULL,
  state         TEXT NOT NULL CHECK (state IN ('waiting', 'claimed', 'unreported')),
  record_id     TEXT,
  PRIMARY KEY (team_id, network, tx_hash, log_index)
);
CREATE INDEX settlement_transfers_waiting ON settlement_transfers (network, seen_at) WHERE state = 'waiting';

-- Where the verifier is: per network the last block its wallet scan covered; "records" the last
-- ingest_seq of the records taken in (the same for every network).
CREATE TABLE settlement_cursors (
  name        TEXT PRIMARY KEY,               -- "records", or "wallets:" + network
  position    INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);

-- What a policy does when an agent it covers pays without a record: NULL only alerts; suspend.
ALTER TABLE policies ADD COLUMN on_unreported TEXT CHECK (on_unreported IN ('suspend'));

CREATE TABLE alerts_rebuilt (
  id                TEXT PRIMARY KEY,
  team_id           TEXT NOT NULL REFERENCES teams (id),
  dedup_key         TEXT NOT NULL,
  type              TEXT NOT NULL CHECK (type IN ('violation', 'anomaly', 'system', 'threshold', 'approval', 'settlement')),
  kind              TEXT NOT NULL,         -- ... for settlement: mismatch, failed, not_found, unreported
  severity          TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  status            TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
  agent_id          TEXT NOT NULL,         -- empty for system alerts
  policy_id         TEXT,
  window_start      INTEGER,
  window_end        INTEGER,
  observed          TEXT,
  limit_value       TEXT,
  subject           TEXT,                  -- for webhook_disabled: the endpoint id; for approvals: the authorization id; settlement: the transaction
  details           TEXT NOT NULL,
  message           TEXT NOT NULL,
  sample_event_ids  TEXT NOT NULL,
  count             INTEGER NOT NULL,
  first_seen        INTEGER NOT NULL,
  last_seen         INTEGER NOT NULL,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL,
  resolved_at       INTEGER,
  resolution        TEXT
);
INSERT INTO alerts_rebuilt SELECT * FROM alerts;
DROP TABLE alerts;
ALTER TABLE alerts_rebuilt RENAME TO alerts;
CREATE UNIQUE INDEX alerts_open_once ON alerts (team_id, dedup_key) WHERE status = 'open';
CREATE INDEX alerts_by_team ON alerts (team_id, created_at, id);
CREATE INDEX alerts_threshold_open ON alerts (window_end) WHERE status = 'open' AND type = 'threshold';
CREATE INDEX alerts_by_agent ON alerts (team_id, agent_id, created_at, id);
CREATE INDEX alerts_by_status ON alerts (team_id, status, created_at, id);
