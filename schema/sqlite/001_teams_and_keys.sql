-- Teams are the tenants: every agent, policy, alert and event belongs to exactly one.
CREATE TABLE teams (
  id          TEXT PRIMARY KEY,          -- "team_" + 20 random base32 characters
  name        TEXT NOT NULL UNIQUE,      -- chosen by the operator; unique so the CLI cannot make look-alikes
  created_at  INTEGER NOT NULL           -- Unix ms
);

-- API keys are stored only as SHA-256 hashes; the plain key is shown once, at creation.
CREATE TABLE api_keys (
  id          TEXT PRIMARY KEY,          -- "key_" + 20 random base32 characters
  team_id     TEXT NOT NULL REFERENCES teams (id),
  prefix      TEXT NOT NULL,             -- first characters of the key, shown so a user can tell keys apart
  key_hash    TEXT NOT NULL UNIQUE,      -- hex SHA-256 of the whole key; the only way a key is looked up
  created_at  INTEGER NOT NULL,          -- Unix ms
  revoked_at  INTEGER                    -- Unix ms; set by rotation, after which the key is rejected
);
CREATE INDEX api_keys_team ON api_keys (team_id);
