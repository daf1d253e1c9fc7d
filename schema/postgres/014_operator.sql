-- The operator's hold over teams and the operator audit log, as in SQLite's 024: a suspended
-- team's keys are refused (403 team_suspended) on every interface while its records stay.
ALTER TABLE teams ADD COLUMN suspended_at bigint;   -- Unix ms; NULL: active

CREATE TABLE operator_audit (
  seq         bigserial PRIMARY KEY,     -- order of the actions; the list pages by it
  id          text NOT NULL UNIQUE,      -- opa_…
  at          bigint NOT NULL,
  actor       text NOT NULL,             -- operator_api or team_create_cli
  request_id  text NOT NULL,
  action      text NOT NULL,             -- team.create, team.suspend, team.resume
  team_id     text NOT NULL REFERENCES teams (id),
  changes     text NOT NULL              -- JSON {field: {"before": …, "after": …}}
);
CREATE INDEX operator_audit_by_team ON operator_audit (team_id, seq);

CREATE FUNCTION operator_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the operator audit log is append-only';
END
$$;
CREATE TRIGGER operator_audit_append_only BEFORE UPDATE OR DELETE ON operator_audit
  FOR EACH ROW EXECUTE FUNCTION operator_audit_append_only();
CREATE TRIGGER operator_audit_no_truncate BEFORE TRUNCATE ON operator_audit
  FOR EACH STATEMENT EXECUTE FUNCTION operator_audit_append_only();
