-- Teams, their API keys and the management audit log: the tables of schema/sqlite 001, 008, 009,
-- 010 and 015 as they stand, for the shared store. Times are Unix ms (bigint), as in SQLite.

-- Teams are the tenants: every agent, policy, alert and event belongs to exactly one.
CREATE TABLE teams (
  id          text PRIMARY KEY,          -- "team_" + 24 base32 characters
  name        text NOT NULL UNIQUE,      -- chosen by the operator; unique so the CLI cannot make look-alikes
  created_at  bigint NOT NULL            -- Unix ms
);

-- API keys are stored only as SHA-256 hashes; the plain key is shown once, at creation.
CREATE TABLE api_keys (
  id                   text PRIMARY KEY,          -- "key_" + 24 base32 characters
  team_id              text NOT NULL REFERENCES teams (id),
  prefix               text NOT NULL,             -- first characters of the key, to tell keys apart
  key_hash             text NOT NULL UNIQUE,      -- hex SHA-256 of the whole key; the only way a key is looked up
  created_at           bigint NOT NULL,
  revoked_at           bigint,                    -- set by revocation and rotation, after which the key is refused
  name                 text NOT NULL DEFAULT 'default',
  scopes               text NOT NULL DEFAULT 'admin',   -- space-separated: ingest, read, admin
  expires_at           bigint,                    -- NULL: never
  last_used_at         bigint,                    -- to the minute; NULL: never used
  requests_per_second  integer,                   -- NULL: the service's default
  records_per_second   integer,                   -- NULL: the service's default
  holder_id            text                       -- the first key of its rotation chain: rate buckets belong to it
);
CREATE INDEX api_keys_team ON api_keys (team_id);

-- Every change made through the management API, written in the transaction that makes it.
-- Append-only: no route changes it, and the trigger below refuses to.
CREATE TABLE management_audit (
  seq            bigserial PRIMARY KEY,     -- order of the changes; the list pages by it
  id             text NOT NULL UNIQUE,      -- chg_…
  team_id        text NOT NULL REFERENCES teams (id),
  at             bigint NOT NULL,
  key_id         text NOT NULL,
  key_name       text NOT NULL,
  request_id     text NOT NULL,
  method         text NOT NULL,
  route          text NOT NULL,
  action         text NOT NULL,
  resource_type  text NOT NULL,
  resource_id    text NOT NULL,
  changes        text NOT NULL              -- JSON {field: {"before": …, "after": …}}
);
CREATE INDEX management_audit_by_team ON management_audit (team_id, seq);
CREATE INDEX management_audit_by_resource ON management_audit (team_id, resource_type, resource_id, seq);
CREATE INDEX management_audit_by_key ON management_audit (team_id, key_id, seq);

CREATE FUNCTION management_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the management audit log is append-only';
END
$$;
CREATE TRIGGER management_audit_append_only BEFORE UPDATE OR DELETE ON management_audit
  FOR EACH ROW EXECUTE FUNCTION management_audit_append_only();
