-- The log's chunks are written as ClickHouse RowBinary since issue 33 (src/ingest/rowbinary.ts):
-- the engine parses a row of it in half the CPU of its TSV line. Chunks written before stay TSV
-- and load as they are; a block holds chunks of one format, recorded with it.
ALTER TABLE ingest_log ADD COLUMN format TEXT NOT NULL DEFAULT 'tsv' CHECK (format = 'tsv' OR format = 'rowbinary');
ALTER TABLE ingest_blocks ADD COLUMN format TEXT NOT NULL DEFAULT 'tsv' CHECK (format = 'tsv' OR format = 'rowbinary');

-- A record set aside keeps its bytes in its chunk's format. A RowBinary chunk whose rows cannot be
-- told apart (damaged) is set aside whole: `rows` records from `pos` on, id unknown ('').
ALTER TABLE ingest_rejects ADD COLUMN format TEXT NOT NULL DEFAULT 'tsv';
ALTER TABLE ingest_rejects ADD COLUMN rows INTEGER NOT NULL DEFAULT 1;
