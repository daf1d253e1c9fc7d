-- The management audit log: every change made through the management API (keys, agents, policies,
-- alerts), who made it (key id and name), what (route, resource, each changed field before and
-- after), when, and the request id. Written in the same transaction as the change it records.
-- Append-only: the API has no route that changes it, and the triggers below refuse to.
CREATE TABLE management_audit (
  seq            INTEGER PRIMARY KEY AUTOINCREMENT,   -- order of the changes; the list pages by it
  id             TEXT NOT NULL UNIQUE,                -- chg_…
  team_id        TEXT NOT NULL REFERENCES teams (id),
  at             INTEGER NOT NULL,                    -- Unix ms
  key_id         TEXT NOT NULL,                       -- the key that made the change
  key_name       TEXT NOT NULL,                       -- its name then
  request_id     TEXT NOT NULL,
  method         TEXT NOT NULL,                       -- POST, PATCH, DELETE
  route          TEXT NOT NULL,                       -- route pattern, e.g. /policies/:id
  action         TEXT NOT NULL,                       -- e.g. policy.update
  resource_type  TEXT NOT NULL,                       -- key, agent, policy, alert
  resource_id    TEXT NOT NULL,
  changes        TEXT NOT NULL                        -- JSON {field: {"before": …, "after": …}}
);
CREATE INDEX management_audit_by_team ON management_audit (team_id, seq);
CREATE INDEX management_audit_by_resource ON management_audit (team_id, resource_type, resource_id, seq);
CREATE INDEX management_audit_by_key ON management_audit (team_id, key_id, seq);

CREATE TRIGGER management_audit_append_only_update BEFORE UPDATE ON management_audit
BEGIN
  SELECT RAISE(ABORT, 'the management audit log is append-only');
END;
CREATE TRIGGER management_audit_append_only_delete BEFORE DELETE ON management_audit
BEGIN
  SELECT RAISE(ABORT, 'the management audit log is append-only');
END;
