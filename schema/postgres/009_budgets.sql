-- Budgets (issue 31), as schema/sqlite/017: a policy's scope, filter, early warnings and the start
-- of its `total` window; what an authorization's filters read; alerts of type `threshold`.
ALTER TABLE policies ADD COLUMN scope text NOT NULL DEFAULT 'agent' CHECK (scope IN ('agent', 'pool'));
ALTER TABLE policies ADD COLUMN match_filter text;
ALTER TABLE policies ADD COLUMN notify_at text NOT NULL DEFAULT '[]';
ALTER TABLE policies ADD COLUMN starts_at bigint;

ALTER TABLE authorizations ADD COLUMN category text;
ALTER TABLE authorizations ADD COLUMN tags text;

ALTER TABLE alerts DROP CONSTRAINT alerts_type_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_type_check CHECK (type IN ('violation', 'anomaly', 'system', 'threshold'));
-- Open threshold alerts by the end of their window: the sweep that resolves them when it ends.
CREATE INDEX alerts_threshold_open ON alerts (window_end) WHERE status = 'open' AND type = 'threshold';
