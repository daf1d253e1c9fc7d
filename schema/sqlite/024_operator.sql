-- The operator's hold over teams: a suspended team's keys are refused (403 team_suspended) on every
-- interface while its records stay; and the operator audit log, every action of the service's
-- owner on teams (the operator API and npm run team:create), apart from any team's own log.
ALTER TABLE teams ADD COLUMN suspended_at INTEGER;   -- Unix ms; NULL: active

CREATE TABLE operator_audit (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,   -- order of the actions; the list pages by it
  id          TEXT NOT NULL UNIQUE,                -- opa_…
  at          INTEGER NOT NULL,                    -- Unix ms
  actor       TEXT NOT NULL,                       -- operator_api or team_create_cli
  request_id  TEXT NOT NULL,                       -- the API request's id; the CLI's run id
  action      TEXT NOT NULL,                       -- team.create, team.suspend, team.resume
  team_id     TEXT NOT NULL REFERENCES teams (id),
  changes     TEXT NOT NULL                        -- JSON {field: {"before": …, "after": …}}
);
CREATE INDEX operator_audit_by_team ON operator_audit (team_id, seq);

CREATE TRIGGER operator_audit_append_only_update BEFORE UPDATE ON operator_audit
BEGIN
  SELECT RAISE(ABORT, 'the operator audit log is append-only');
END;
CREATE TRIGGER operator_audit_append_only_delete BEFORE DELETE ON operator_audit
BEGIN
  SELECT RAISE(ABORT, 'the operator audit log is append-only');
END;
