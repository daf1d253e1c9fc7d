-- Each key's own rate limits (token buckets, a burst of one second's worth). NULL: the service's
-- defaults (RATE_LIMIT_REQUESTS_PER_SECOND, RATE_LIMIT_RECORDS_PER_SECOND), so changing a default
-- reaches every key that did not choose its own.
ALTER TABLE api_keys ADD COLUMN requests_per_second INTEGER;   -- requests other than ingest, a second
ALTER TABLE api_keys ADD COLUMN records_per_second INTEGER;    -- records sent to the ingest routes, a second
