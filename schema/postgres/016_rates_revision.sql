-- Raised by every change to a team's rates or currency: an instance compares it with the rates it
-- holds in memory, so a change whose NOTIFY it missed is read again.
ALTER TABLE teams ADD COLUMN rates_revision bigint NOT NULL DEFAULT 0;

-- The ingest log's chunks now carry each record's value (src/ingest/rowbinary.ts, format rowbinary2).
ALTER TABLE ingest_chunks DROP CONSTRAINT ingest_chunks_format_check;
ALTER TABLE ingest_chunks ADD CONSTRAINT ingest_chunks_format_check CHECK (format IN ('tsv', 'rowbinary', 'rowbinary2'));
ALTER TABLE ingest_blocks DROP CONSTRAINT ingest_blocks_format_check;
ALTER TABLE ingest_blocks ADD CONSTRAINT ingest_blocks_format_check CHECK (format IN ('tsv', 'rowbinary', 'rowbinary2'));
