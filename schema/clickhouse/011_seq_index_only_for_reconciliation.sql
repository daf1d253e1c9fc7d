-- The min-max index on events.ingest_seq (010) serves only the settlement verifier's intake, and
-- each new part of events carries its files: measured, it cost every service about 5% of its ingest
-- rate at 16 clients. The verifier adds it when it starts (CHAIN_RPC_URLS set); others go without.
ALTER TABLE events DROP INDEX IF EXISTS seq_minmax;
