-- The order in which records were stored: the client SDK's queries answer in insertion order when
-- they name no ordering, and break ties by it. Assigned by the writer (microseconds since the
-- epoch, increasing); 0 for rows stored before this column existed (they sort first, then by time).
ALTER TABLE events ADD COLUMN IF NOT EXISTS ingest_seq UInt64 DEFAULT 0
    COMMENT 'Order in which spendscope stored the record (increasing, microsecond-based); the SDK''s insertion order. 0 for records stored before it existed.';
