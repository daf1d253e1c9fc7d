-- Keys that fit their holders: a name, scopes (ingest, read, admin), an optional expiry, and when a
-- key was last used (coarse: written at most once a minute per key, never on every request).
-- Keys made before scopes existed could do everything: they become admin keys named "default".
ALTER TABLE api_keys ADD COLUMN name TEXT NOT NULL DEFAULT 'default';
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'admin';   -- space-separated: ingest, read, admin
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;                     -- Unix ms; NULL: never
ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER;                   -- Unix ms, to the minute; NULL: never used
