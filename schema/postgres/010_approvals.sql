-- Ask a person, allow only what is known (issue 32), as schema/sqlite/018: a policy's third action
-- `approve`, its approval timeout and allowlist; authorizations pending a person and who decided
-- them; alerts of type `approval`.
ALTER TABLE policies DROP CONSTRAINT policies_action_check;
ALTER TABLE policies ADD CONSTRAINT policies_action_check CHECK (action IN ('flag', 'block', 'approve'));
ALTER TABLE policies ADD COLUMN approval_timeout_s integer;
ALTER TABLE policies ADD COLUMN allow_list text;

ALTER TABLE authorizations DROP CONSTRAINT authorizations_decision_check;
ALTER TABLE authorizations ADD CONSTRAINT authorizations_decision_check CHECK (decision IN ('approved', 'declined', 'pending'));
ALTER TABLE authorizations DROP CONSTRAINT authorizations_state_check;
ALTER TABLE authorizations ADD CONSTRAINT authorizations_state_check CHECK (state IN ('held', 'captured', 'voided', 'declined', 'pending'));
ALTER TABLE authorizations ADD COLUMN hold_s integer;
ALTER TABLE authorizations ADD COLUMN pending_until bigint;
ALTER TABLE authorizations ADD COLUMN decided_at bigint;
ALTER TABLE authorizations ADD COLUMN decided_by text;
ALTER TABLE authorizations ADD COLUMN decision_note text;
-- Live holds (held, or pending a person) of some agents, read under their totals' locks.
DROP INDEX authorizations_held;
CREATE INDEX authorizations_live ON authorizations (team_id, agent_id, expires_at) WHERE state IN ('held', 'pending');
-- Pending ones whose wait has ended: the sweep that writes them declined.
CREATE INDEX authorizations_pending ON authorizations (expires_at) WHERE state = 'pending';

ALTER TABLE alerts DROP CONSTRAINT alerts_type_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_type_check CHECK (type IN ('violation', 'anomaly', 'system', 'threshold', 'approval'));
