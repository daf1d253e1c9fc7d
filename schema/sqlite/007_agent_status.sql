-- An agent can be suspended (PATCH /agents/:id): listed as such. Ingest still stores its events:
-- spendscope records what was paid, and a record refused would be a payment nobody sees.
ALTER TABLE agents ADD COLUMN status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended'));
