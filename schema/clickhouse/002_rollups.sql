-- Rollups of `events` for analytics and BI. Each is fed by a materialized view on every insert into
-- events (duplicates never reach events, so they never reach a rollup). A rollup row is a partial:
-- always read with sum(...) GROUP BY. Sums are Decimal(76, 18) so a team's total cannot overflow.

CREATE TABLE IF NOT EXISTS spend_hourly
(
    team_id           String                                       COMMENT 'Tenant (team of the API key); leads the sort key.',
    hour              DateTime('UTC')                              COMMENT 'Start of the UTC hour of event_time.',
    agent_id          String                                       COMMENT 'Agent that paid.',
    domain            LowCardinality(String)                       COMMENT 'Host of the endpoint called.',
    category          LowCardinality(String)                       COMMENT 'Spend category (llm, api, data, ...).',
    network           LowCardinality(String)                       COMMENT 'CAIP-2 chain id; empty when unknown.',
    policy_evaluation LowCardinality(String)                       COMMENT 'allowed, flagged or blocked (as the client reported).',
    spend             SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of amount (asset units, exact). Read with sum(spend).',
    events            SimpleAggregateFunction(sum, UInt64)          COMMENT 'Number of events. Read with sum(events).',
    max_amount        SimpleAggregateFunction(max, Decimal(38, 18)) COMMENT 'Largest single amount. Read with max(max_amount).'
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (team_id, hour, agent_id, domain, category, network, policy_evaluation)
COMMENT 'Spend per team, UTC hour, agent, domain, category, network and outcome. Serves summary and the by-* analytics.';

CREATE MATERIALIZED VIEW IF NOT EXISTS spend_hourly_mv TO spend_hourly AS
SELECT team_id, toStartOfHour(event_time) AS hour, agent_id, domain, category, network, policy_evaluation,
       sum(toDecimal256(amount, 18)) AS spend, count() AS events, max(amount) AS max_amount
FROM events
GROUP BY team_id, hour, agent_id, domain, category, network, policy_evaluation;

CREATE TABLE IF NOT EXISTS spend_hourly_by_url
(
    team_id   String                                        COMMENT 'Tenant (team of the API key); leads the sort key.',
    hour      DateTime('UTC')                               COMMENT 'Start of the UTC hour of event_time.',
    endpoint  String                                        COMMENT 'Full URL called.',
    spend     SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of amount (asset units, exact). Read with sum(spend).',
    events    SimpleAggregateFunction(sum, UInt64)          COMMENT 'Number of events. Read with sum(events).'
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (team_id, hour, endpoint)
COMMENT 'Spend per team, UTC hour and full URL. Serves by-endpoint?level=url.';

CREATE MATERIALIZED VIEW IF NOT EXISTS spend_hourly_by_url_mv TO spend_hourly_by_url AS
SELECT team_id, toStartOfHour(event_time) AS hour, endpoint, sum(toDecimal256(amount, 18)) AS spend, count() AS events
FROM events
GROUP BY team_id, hour, endpoint;

CREATE TABLE IF NOT EXISTS spend_minutely
(
    team_id  String                                        COMMENT 'Tenant (team of the API key); leads the sort key.',
    minute   DateTime('UTC')                               COMMENT 'Start of the UTC minute of event_time.',
    spend    SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of amount (asset units, exact). Read with sum(spend).',
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
INSERT INTO spend_hourly
SELECT team_id, toStartOfHour(event_time) AS hour, agent_id, domain, category, network, policy_evaluation,
       sum(toDecimal256(amount, 18)), count(), max(amount)
FROM events
WHERE (SELECT count() FROM spend_hourly) = 0
GROUP BY team_id, hour, agent_id, domain, category, network, policy_evaluation;

INSERT INTO spend_hourly_by_url
SELECT team_id, toStartOfHour(event_time) AS hour, endpoint, sum(toDecimal256(amount, 18)), count()
FROM events
WHERE (SELECT count() FROM spend_hourly_by_url) = 0
GROUP BY team_id, hour, endpoint;

INSERT INTO spend_minutely
SELECT team_id, toStartOfMinute(event_time) AS minute, sum(toDecimal256(amount, 18)), count()
FROM events
WHERE (SELECT count() FROM spend_minutely) = 0
GROUP BY team_id, minute;
