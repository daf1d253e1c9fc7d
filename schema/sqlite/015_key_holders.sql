-- A key's holder: the id of the first key of its rotation chain. Rate buckets (and BI concurrency)
-- belong to the holder, so a key that rotates itself keeps its predecessor's buckets instead of
-- starting afresh. A key made by POST /keys or with its team is its own holder; the key a rotation
-- issues takes its predecessor's. Existing keys have never been told apart from their chains: each
-- becomes its own holder.
ALTER TABLE api_keys ADD COLUMN holder_id TEXT;                -- "key_..." of the chain's first key; NULL only in rows written by a build before this migration
UPDATE api_keys SET holder_id = id;
