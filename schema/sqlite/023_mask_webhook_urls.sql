-- Webhook URLs stored in clear outside their sealed column are rewritten as the API shows them
-- (src/webhooks/shown-url.ts: userinfo, query values and a slack path masked): in the audit log's
-- entries of endpoints, the alerts of endpoints disabled, and the events that carried those alerts.
-- The new values are computed in code before this file runs, in this transaction, into the
-- temporary table webhook_url_rewrites (src/stores/migration-steps.ts, mask_webhook_urls).

-- Space freed by the rewrite is zeroed, so the old values stay in no page of the file (the
-- runner then empties the WAL).
PRAGMA secure_delete = ON;

-- The audit log is append-only; this rewrite, in this transaction alone, is the exception.
DROP TRIGGER management_audit_append_only_update;
UPDATE management_audit SET changes = r.value
  FROM webhook_url_rewrites r
 WHERE r.row_table = 'management_audit' AND r.row_column = 'changes' AND r.row_id = management_audit.id;
CREATE TRIGGER management_audit_append_only_update BEFORE UPDATE ON management_audit
BEGIN
  SELECT RAISE(ABORT, 'the management audit log is append-only');
END;

UPDATE alerts SET details = r.value
  FROM webhook_url_rewrites r
 WHERE r.row_table = 'alerts' AND r.row_column = 'details' AND r.row_id = alerts.id;
UPDATE alerts SET message = r.value
  FROM webhook_url_rewrites r
 WHERE r.row_table = 'alerts' AND r.row_column = 'message' AND r.row_id = alerts.id;
UPDATE webhook_deliveries SET payload = r.value
  FROM webhook_url_rewrites r
 WHERE r.row_table = 'webhook_deliveries' AND r.row_column = 'payload' AND r.row_id = webhook_deliveries.id;

DROP TABLE webhook_url_rewrites;
PRAGMA secure_delete = OFF;
