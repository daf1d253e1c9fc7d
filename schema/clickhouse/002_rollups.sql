-- Rollups of `events` for analytics and BI, fed by materialized views on every insert into events
-- (duplicates never reach events, so they never reach a rollup). A rollup row is a partial:
-- always read with sum(...) / max(...) GROUP BY. Sums are Decimal(76, 18): a total cannot overflow.

-- One narrow row per (team, dimension, hour, key). One table with a dimension column, not a
-- table per dimension: each rollup table costs a part per ingest flush, and parts are what
-- ingest pays for; and the dimensions together (agent x domain x network x ...) would hardly
-- compress (7.4 million rows for 10 million events, measured).
CREATE TABLE IF NOT EXISTS spend_hourly_by
(
    team_id     String                                        COMMENT 'Tenant (team of the API key); leads the sort key.',
    dimension   LowCardinality(String)                        COMMENT 'What key is: agent, domain, url, category, network or outcome (allowed, flagged, blocked). Every event counts once in each dimension.',
    hour        DateTime('UTC')                               COMMENT 'Start of the UTC hour of event_time.',
    key         String                                        COMMENT 'Value of the dimension: agent id, host, full URL, category, CAIP-2 network or outcome.',
    spend       SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of amount in asset units, exact. Read with sum(spend).',
    events      SimpleAggregateFunction(sum, UInt64)          COMMENT 'Number of events. Read with sum(events).',
    max_amount  SimpleAggregateFunction(max, Decimal(38, 18)) COMMENT 'Largest single amount. Read with max(max_amount).'
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (team_id, dimension, hour, key)
COMMENT 'Spend per team, UTC hour and value of one dimension (agent, domain, url, category, network, outcome). Serves summary and the by-* analytics; filter on dimension.';

CREATE MATERIALIZED VIEW IF NOT EXISTS spend_hourly_by_mv TO spend_hourly_by AS
SELECT team_id, dim.1 AS dimension, toStartOfHour(event_time) AS hour, dim.2 AS key,
       sum(toDecimal256(amount, 18)) AS spend, count() AS events, max(amount) AS max_amount
FROM events
ARRAY JOIN [('agent', agent_id), ('domain', toString(domain)), ('url', endpoint), ('category', toString(category)),
            ('network', toString(network)), ('outcome', toString(policy_evaluation))] AS dim
GROUP BY team_id, dimension, hour, key;

CREATE TABLE IF NOT EXISTS spend_minutely
(
    team_id  String                                        COMMENT 'Tenant (team of the API key); leads the sort key.',
    minute   DateTime('UTC')                               COMMENT 'Start of the UTC minute of event_time.',
    spend    SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of amount in asset units, exact. Read with sum(spend).',
    events   SimpleAggregateFunction(sum, UInt64)          COMMENT 'Number of events. Read with sum(events).'
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (team_id, minute)
COMMENT 'Spend per team and UTC minute. Serves timeseries at any granularity and in any time zone.';

CREATE MATERIALIZED VIEW IF NOT EXISTS spend_minutely_mv TO spend_minutely AS
SELECT team_id, toStartOfMinute(event_time) AS minute, sum(toDecimal256(amount, 18)) AS spend, count() AS events
FROM events
GROUP BY team_id, minute;

-- Materialized views see only new inserts: backfill what events already holds, once. The guard
-- keeps a re-run of this migration (after a failure further down) from counting rows twice.
INSERT INTO spend_hourly_by
SELECT team_id, dim.1 AS dimension, toStartOfHour(event_time) AS hour, dim.2 AS key,
       sum(toDecimal256(amount, 18)), count(), max(amount)
FROM events
ARRAY JOIN [('agent', agent_id), ('domain', toString(domain)), ('url', endpoint), ('category', toString(category)),
            ('network', toString(network)), ('outcome', toString(policy_evaluation))] AS dim
WHERE (SELECT count() FROM spend_hourly_by) = 0
GROUP BY team_id, dimension, hour, key;

INSERT INTO spend_minutely
SELECT team_id, toStartOfMinute(event_time) AS minute, sum(toDecimal256(amount, 18)), count()
FROM events
WHERE (SELECT count() FROM spend_minutely) = 0
GROUP BY team_id, minute;
