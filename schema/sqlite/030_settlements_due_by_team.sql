-- The verifier takes a share of each round per team with pending settlements (round-robin), so one
-- team's flood of records does not hold back another's checks: teams are found, and each one's due
-- settlements read, through this index.
CREATE INDEX settlements_due_by_team ON settlements (network, team_id, next_check_at) WHERE status = 'pending';
