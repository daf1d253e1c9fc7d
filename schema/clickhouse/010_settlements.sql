-- Records checked against the chain (docs/reconciliation.md): the verifier copies each settlement's
-- latest state here, so BI tools join a record's settlement status to its event. The registry keeps
-- the truth; this copy follows it within a verification cycle.
CREATE TABLE IF NOT EXISTS settlements
(
    team_id          String                        COMMENT 'Tenant: the team of the record. Leads the sort key; filter on it first.',
    id               String                        COMMENT 'Settlement id: r:<record id>, or t:<network>:<tx hash>:<log index> for a transfer no record claimed.',
    record_id        String                        COMMENT 'The record checked (join events.id on team_id); empty for an unreported transfer.',
    agent_id         String                        COMMENT 'External id of the agent.',
    network          LowCardinality(String)        COMMENT 'Chain as CAIP-2 (eip155:8453).',
    tx_hash          String                        COMMENT 'Transaction hash, lower case.',
    status           LowCardinality(String)        COMMENT 'pending, verified, mismatch, failed, not_found, unverifiable or unreported (docs/reconciliation.md).',
    differences      Array(String)                 COMMENT 'The fields that differ from the chain under mismatch: amount, asset, payer, payee.',
    asset            String                        COMMENT 'The record''s asset as sent; for an unreported transfer the token address.',
    token            String                        COMMENT 'The token contract the record''s asset means on its network (lower case); empty when unknown.',
    reported_amount  Nullable(Decimal(38, 18))     COMMENT 'Amount the record reported, in units of its asset; NULL for an unreported transfer.',
    observed_amount  Nullable(Decimal(38, 18))     COMMENT 'Amount the matching transfer moved, in units of the token; NULL when none was seen or its decimals are unknown.',
    observed_token   String                        COMMENT 'Token contract of the matching transfer; empty when none was seen.',
    observed_payer   String                        COMMENT 'Payer of the matching transfer; empty when none was seen.',
    observed_payee   String                        COMMENT 'Payee of the matching transfer; empty when none was seen.',
    block_number     UInt64                        COMMENT 'Block of the transaction as last seen; 0 when not seen.',
    occurred_at      DateTime64(3, 'UTC')          COMMENT 'The record''s event time, or when the unreported transfer was seen.',
    checked_at       DateTime64(3, 'UTC')          COMMENT 'When this state was found.',
    version          UInt64                        COMMENT 'Increasing per change; the row with the highest is current (read with FINAL).'
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (team_id, id)
COMMENT 'Settlement status of records with a transaction hash, one current row per id (read with FINAL); see docs/reconciliation.md.';

-- The verifier takes in new records by ingest_seq: a min-max index keeps that read to the newest granules.
ALTER TABLE events ADD INDEX IF NOT EXISTS seq_minmax ingest_seq TYPE minmax GRANULARITY 1;
ALTER TABLE events MATERIALIZE INDEX seq_minmax;
