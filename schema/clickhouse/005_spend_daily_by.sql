-- Daily partials of spend_hourly_by, so a month of a dimension is about 30 rows per key, not 720:
-- analytics read whole UTC days here, whole hours at the ends from spend_hourly_by, and the rest
-- from events. Fed from what is inserted into spend_hourly_by (already summed per hour), not from
-- events, so it costs ingest a few rows per flush, not a row per event.
CREATE TABLE IF NOT EXISTS spend_daily_by
(
    team_id     String                                        COMMENT 'Tenant (team of the API key); leads the sort key.',
    dimension   LowCardinality(String)                        COMMENT 'What key is: agent, domain, url, category, network or outcome (allowed, flagged, blocked). Every event counts once in each dimension.',
    day         Date                                          COMMENT 'UTC day of event_time.',
    key         String                                        COMMENT 'Value of the dimension: agent id, host, full URL, category, CAIP-2 network or outcome.',
    spend       SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of amount in asset units, exact. Read with sum(spend).',
    events      SimpleAggregateFunction(sum, UInt64)          COMMENT 'Number of events. Read with sum(events).',
    max_amount  SimpleAggregateFunction(max, Decimal(38, 18)) COMMENT 'Largest single amount. Read with max(max_amount).'
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (team_id, dimension, day, key)
COMMENT 'Spend per team, UTC day and value of one dimension (agent, domain, url, category, network, outcome): spend_hourly_by summed per day. Filter on dimension; dimension outcome counts every event once (totals).';

CREATE MATERIALIZED VIEW IF NOT EXISTS spend_daily_by_mv TO spend_daily_by AS
SELECT team_id, dimension, toDate(hour) AS day, key, sum(spend) AS spend, sum(events) AS events, max(max_amount) AS max_amount
FROM spend_hourly_by
GROUP BY team_id, dimension, day, key;

ALTER TABLE spend_daily_by_mv MODIFY COMMENT 'Feeds spend_daily_by from every insert into spend_hourly_by, summed per UTC day.';

-- Backfill what spend_hourly_by already holds, once (the guard keeps a re-run from counting twice).
INSERT INTO spend_daily_by
SELECT team_id, dimension, toDate(hour), key, sum(spend), sum(events), max(max_amount)
FROM spend_hourly_by
WHERE (SELECT count() FROM spend_daily_by) = 0
GROUP BY team_id, dimension, toDate(hour), key;
