-- Webhook URLs stored in clear outside their sealed column are rewritten as the API shows them
-- (src/webhooks/shown-url.ts: userinfo, query values and a slack path masked), as in SQLite's 023:
-- in the audit log's entries of endpoints, the alerts of endpoints disabled, and the events that
-- carried those alerts. The new values are computed in code before this file runs, in this
-- transaction, into the temporary table webhook_url_rewrites (src/stores/migration-steps.ts,
-- mask_webhook_urls). The old row versions are reclaimed by vacuum.

-- The audit log is append-only; this rewrite, in this transaction alone, is the exception.
ALTER TABLE management_audit DISABLE TRIGGER management_audit_append_only;
UPDATE management_audit m SET changes = r.value
  FROM webhook_url_rewrites r
 WHERE r.row_table = 'management_audit' AND r.row_column = 'changes' AND r.row_id = m.id;
ALTER TABLE management_audit ENABLE TRIGGER management_audit_append_only;

UPDATE alerts a SET details = r.value
  FROM webhook_url_rewrites r
 WHERE r.row_table = 'alerts' AND r.row_column = 'details' AND r.row_id = a.id;
UPDATE alerts a SET message = r.value
  FROM webhook_url_rewrites r
 WHERE r.row_table = 'alerts' AND r.row_column = 'message' AND r.row_id = a.id;
UPDATE webhook_deliveries d SET payload = r.value
  FROM webhook_url_rewrites r
 WHERE r.row_table = 'webhook_deliveries' AND r.row_column = 'payload' AND r.row_id = d.id;

DROP TABLE webhook_url_rewrites;
