-- Records checked against the chain (issue 63, docs/reconciliation.md). A settlement is one record
-- with a transaction hash as the chain showed it, or a transfer from an agent's wallet that no
-- record claimed (record_id NULL, status unreported). Agents' wallets, the transfers seen from them,
-- and each network's cursors live beside it. Alerts gain the type `settlement`: its check is
-- widened.

CREATE TABLE settlements (
  id                text NOT NULL,             -- "r:" + record id, or "t:" + network + ":" + tx hash + ":" + log index: unique in the team
  team_id           text NOT NULL REFERENCES teams (id),
  record_id         text,                      -- NULL for an unreported transfer
  agent_id          text NOT NULL,
  network           text NOT NULL,             -- CAIP-2
  tx_hash           text NOT NULL,             -- lower case
  status            text NOT NULL CHECK (status IN ('pending', 'verified', 'mismatch', 'failed', 'not_found', 'unverifiable', 'unreported')),
  reported          text NOT NULL,             -- JSON {amount, amount_raw, asset, token, payer, payee}; {} for a transfer
  observed          text,                      -- JSON {amount, amount_raw, asset, token, payer, payee, block_number, block_hash}; NULL until seen
  differences       text NOT NULL,             -- JSON array of {field, reported, observed}
  note              text,                      -- why it is pending, unverifiable, or went back after a reorganisation
  block_number      bigint,                   -- of the transaction as last seen
  block_hash        text,
  occurred_at       bigint NOT NULL,          -- Unix ms: the record's event time, or when the transfer was seen
  grace_from        bigint NOT NULL,          -- Unix ms: not_found once the grace period has passed since this
  checked_at        bigint,                   -- Unix ms of the last check; NULL before the first
  next_check_at     bigint NOT NULL,          -- Unix ms: when the verifier looks at it again
  mirrored          integer NOT NULL DEFAULT 0, -- 1 once ClickHouse's copy (settlements, for BI) has this state
  created_at        bigint NOT NULL,
  PRIMARY KEY (team_id, id)
);
CREATE INDEX settlements_due ON settlements (network, next_check_at) WHERE status = 'pending';
CREATE INDEX settlements_recent ON settlements (network, block_number) WHERE status IN ('verified', 'mismatch', 'failed');
CREATE INDEX settlements_tx ON settlements (network, tx_hash);
CREATE INDEX settlements_team_tx ON settlements (team_id, tx_hash);
CREATE INDEX settlements_list ON settlements (team_id, occurred_at, id);
CREATE INDEX settlements_unmirrored ON settlements (team_id) WHERE mirrored = 0;

CREATE TABLE agent_wallets (
  team_id      text NOT NULL REFERENCES teams (id),
  agent_id     text NOT NULL,                  -- external id
  network      text NOT NULL,                  -- CAIP-2
  address      text NOT NULL,                  -- lower case
  created_at   bigint NOT NULL,
  PRIMARY KEY (team_id, network, address)
);
CREATE INDEX agent_wallets_network ON agent_wallets (network, address);
CREATE INDEX agent_wallets_agent ON agent_wallets (team_id, agent_id);

-- Transfers from registered wallets, as seen past the confirmation depth; waiting for a record.
CREATE TABLE settlement_transfers (
  team_id       text NOT NULL,
  network       text NOT NULL,
  tx_hash       text NOT NULL,
  log_index     bigint NOT NULL,
  agent_id      text NOT NULL,
  token         text NOT NULL,
  payer         text NOT NULL,
  payee         text NOT NULL,
  amount_raw    text NOT NULL,
  block_number  bigint NOT NULL,
  block_hash    text NOT NULL,
  seen_at       bigint NOT NULL,
  state         text NOT NULL CHECK (state IN ('waiting', 'claimed', 'unreported')),
  record_id     text,
  PRIMARY KEY (team_id, network, tx_hash, log_index)
);
CREATE INDEX settlement_transfers_waiting ON settlement_transfers (network, seen_at) WHERE state = 'waiting';

-- Where the verifier is: per network the last block its wallet scan covered; "records" the last
-- ingest_seq of the records taken in (the same for every network).
CREATE TABLE settlement_cursors (
  name        text PRIMARY KEY,               -- "records", or "wallets:" + network
  position    bigint NOT NULL,
  updated_at  bigint NOT NULL
);

-- What a policy does when an agent it covers pays without a record: NULL only alerts; suspend.
ALTER TABLE policies ADD COLUMN on_unreported text CHECK (on_unreported IN ('suspend'));

ALTER TABLE alerts DROP CONSTRAINT alerts_type_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_type_check CHECK (type IN ('violation', 'anomaly', 'system', 'threshold', 'approval', 'settlement'));
