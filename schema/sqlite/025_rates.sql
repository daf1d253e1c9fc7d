-- Valuation: each team's currency, and the rates it values assets in. A rate is one unit of an
-- asset (or of a currency) in a currency from valid_from on, until the asset's next version; the
-- versions are the history, never rewritten (append-only), so a value stays auditable.
ALTER TABLE teams ADD COLUMN currency TEXT NOT NULL DEFAULT 'USD';   -- ISO 4217

CREATE TABLE rates (
  team_id     TEXT NOT NULL REFERENCES teams (id),
  asset       TEXT NOT NULL,      -- a symbol in upper case, an EVM address in lower case, or a currency code
  valid_from  INTEGER NOT NULL,   -- Unix ms
  value       TEXT,               -- a positive decimal; NULL: the team's rate ends at valid_from
  currency    TEXT,               -- ISO 4217; NULL with value
  decimals    INTEGER,            -- of the asset's smallest unit (amount_raw), when given
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (team_id, asset, valid_from)
) WITHOUT ROWID;

CREATE TRIGGER rates_append_only_update BEFORE UPDATE ON rates
BEGIN
  SELECT RAISE(ABORT, 'rates keep their history: a version is never changed');
END;
CREATE TRIGGER rates_append_only_delete BEFORE DELETE ON rates
BEGIN
  SELECT RAISE(ABORT, 'rates keep their history: a version is never removed');
END;
