-- The log's chunks are written as ClickHouse RowBinary since issue 33 (src/ingest/rowbinary.ts):
-- the engine parses a row of it in half the CPU of its TSV line. Chunks written before, and by an
-- instance of an earlier version still running, stay TSV (the column's default) and load as they
-- are; a block holds chunks of one format, recorded with it.
ALTER TABLE ingest_chunks ADD COLUMN format text NOT NULL DEFAULT 'tsv' CHECK (format IN ('tsv', 'rowbinary'));

-- A block's format has no default: a loader of an earlier version (which would send RowBinary
-- chunks to ClickHouse as TSV) can no longer record a block, and fails until it is upgraded,
-- while an upgraded instance takes the loader's lock. Blocks recorded before are TSV.
ALTER TABLE ingest_blocks ADD COLUMN format text;
UPDATE ingest_blocks SET format = 'tsv';
ALTER TABLE ingest_blocks ALTER COLUMN format SET NOT NULL;
ALTER TABLE ingest_blocks ADD CHECK (format IN ('tsv', 'rowbinary'));

-- As schema/sqlite/021: bytes in their chunk's format; a damaged RowBinary chunk set aside whole.
ALTER TABLE ingest_rejects ADD COLUMN format text NOT NULL DEFAULT 'tsv';
ALTER TABLE ingest_rejects ADD COLUMN rows integer NOT NULL DEFAULT 1;
