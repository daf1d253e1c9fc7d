-- Instances of the version before rowbinary2 must stop loading and writing while a cluster is
-- upgraded one instance at a time: an old loader would take a rowbinary2 chunk for TSV lines and
-- set its records aside, and an old writer's chunks would carry no values. An old loader records
-- blocks without `layout` (refused: no default); an old writer's rowbinary chunk is refused by the
-- check (NOT VALID: chunks written before the upgrade stay, and load as they are).
ALTER TABLE ingest_blocks ADD COLUMN layout smallint NOT NULL DEFAULT 2;
ALTER TABLE ingest_blocks ALTER COLUMN layout DROP DEFAULT;
ALTER TABLE ingest_chunks ADD CONSTRAINT ingest_chunks_current_format CHECK (format IN ('tsv', 'rowbinary2')) NOT VALID;
