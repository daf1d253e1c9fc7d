-- A team's policy revision: raised in the transaction of every change to its policies. With one
-- instance the process's own counter is enough; the column keeps the two stores' statements one.
ALTER TABLE teams ADD COLUMN policy_revision INTEGER NOT NULL DEFAULT 0;
