-- Every record valued in its team's currency at acknowledgement (docs/rates.md): the value, the
-- currency, and the rate used, so a value can be audited and a later rate never rewrites it.
ALTER TABLE events ADD COLUMN IF NOT EXISTS value Nullable(Decimal(38, 18))
    COMMENT 'The amount in the team''s currency (column currency): amount times the rate valid at event_time (and at most one conversion), rounded half-even to 18 places, set when spendscope acknowledged the record. NULL: unvalued (no rate for its asset then, or an amount_raw of unknown decimals). 0 for a record that paid nothing.';
ALTER TABLE events ADD COLUMN IF NOT EXISTS currency LowCardinality(String) DEFAULT ''
    COMMENT 'ISO 4217 code of value: the team''s currency when the record was acknowledged. Empty for records stored before values existed and not yet valued.';
ALTER TABLE events ADD COLUMN IF NOT EXISTS valuation String DEFAULT ''
    COMMENT 'JSON of the rate the value used ({"rate": {asset, value, currency, valid_from, source}, "conversion": {...}} when its currency was converted once more); empty when unvalued or nothing was paid.';

-- The rollups sum value per currency: a team that changes its currency never adds unlike units.
-- Rows from before carry currency '' and no value; readers add value only in the currency asked.
ALTER TABLE spend_hourly_by
    ADD COLUMN IF NOT EXISTS currency LowCardinality(String) COMMENT 'Currency of value (the records'' events.currency); empty for records not valued.',
    ADD COLUMN IF NOT EXISTS value SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of events.value in currency, exact. Read with sum(value) and a filter on currency.',
    ADD COLUMN IF NOT EXISTS valued SimpleAggregateFunction(sum, UInt64) COMMENT 'Number of events with a value (events minus valued: unvalued). Read with sum(valued).',
    MODIFY ORDER BY (team_id, dimension, hour, key, currency);
ALTER TABLE spend_daily_by
    ADD COLUMN IF NOT EXISTS currency LowCardinality(String) COMMENT 'Currency of value (the records'' events.currency); empty for records not valued.',
    ADD COLUMN IF NOT EXISTS value SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of events.value in currency, exact. Read with sum(value) and a filter on currency.',
    ADD COLUMN IF NOT EXISTS valued SimpleAggregateFunction(sum, UInt64) COMMENT 'Number of events with a value (events minus valued: unvalued). Read with sum(valued).',
    MODIFY ORDER BY (team_id, dimension, day, key, currency);
ALTER TABLE spend_minutely
    ADD COLUMN IF NOT EXISTS currency LowCardinality(String) COMMENT 'Currency of value (the records'' events.currency); empty for records not valued.',
    ADD COLUMN IF NOT EXISTS value SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of events.value in currency, exact. Read with sum(value) and a filter on currency.',
    ADD COLUMN IF NOT EXISTS valued SimpleAggregateFunction(sum, UInt64) COMMENT 'Number of events with a value (events minus valued: unvalued). Read with sum(valued).',
    MODIFY ORDER BY (team_id, minute, currency);
