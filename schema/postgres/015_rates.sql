-- Valuation, as in SQLite's 025: each team's currency, and its rates' versions (append-only).
ALTER TABLE teams ADD COLUMN currency text NOT NULL DEFAULT 'USD';   -- ISO 4217

CREATE TABLE rates (
  team_id     text NOT NULL REFERENCES teams (id),
  asset       text NOT NULL,     -- a symbol in upper case, an EVM address in lower case, or a currency code
  valid_from  bigint NOT NULL,   -- Unix ms
  value       text,              -- a positive decimal; NULL: the team's rate ends at valid_from
  currency    text,              -- ISO 4217; NULL with value
  decimals    integer,           -- of the asset's smallest unit (amount_raw), when given
  created_at  bigint NOT NULL,
  PRIMARY KEY (team_id, asset, valid_from)
);

CREATE FUNCTION rates_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'rates keep their history: a version is never changed or removed';
END
$$;
CREATE TRIGGER rates_append_only BEFORE UPDATE OR DELETE ON rates
  FOR EACH ROW EXECUTE FUNCTION rates_append_only();
CREATE TRIGGER rates_no_truncate BEFORE TRUNCATE ON rates
  FOR EACH STATEMENT EXECUTE FUNCTION rates_append_only();
