-- The ends of a range that are not whole hours were read from events: up to two hours of a team's
-- records per answer, which grows with the team's volume. This rollup holds the by-dimension sums
-- per UTC minute, so an answer reads whole minutes there and events only for the seconds at its
-- ends. The loader fills it for every block once it has backfilled it for the records loaded
-- before (src/ingest/minute-backfill.ts); until then analytics do not read it.
CREATE TABLE IF NOT EXISTS spend_minutely_by
(
    team_id     String                                        COMMENT 'Tenant (team of the API key); leads the sort key.',
    dimension   LowCardinality(String)                        COMMENT 'What key is: agent, domain, url, category, network, outcome, asset; unpriced (records of unknown decimals, by asset). Every event counts once in each dimension but unpriced.',
    minute      DateTime('UTC')                               COMMENT 'Start of the UTC minute of event_time.',
    key         String                                        COMMENT 'Value of the dimension: agent id, host, full URL, category, CAIP-2 network, outcome or asset.',
    currency    LowCardinality(String)                        COMMENT 'Currency of value (the records'' events.currency); empty for records not valued.',
    spend       SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of amount in asset units, exact. Read with sum(spend).',
    events      SimpleAggregateFunction(sum, UInt64)          COMMENT 'Number of events. Read with sum(events).',
    max_amount  SimpleAggregateFunction(max, Decimal(38, 18)) COMMENT 'Largest single amount. Read with max(max_amount).',
    value       SimpleAggregateFunction(sum, Decimal(76, 18)) COMMENT 'Sum of events.value in currency, exact. Read with sum(value) and a filter on currency.',
    valued      SimpleAggregateFunction(sum, UInt64)          COMMENT 'Number of events with a value (events minus valued: unvalued). Read with sum(valued).'
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (team_id, dimension, minute, key, currency)
SETTINGS non_replicated_deduplication_window = 1000, fsync_after_insert = 1, fsync_part_directory = 1
COMMENT 'Spend per team, UTC minute and value of one dimension (as spend_hourly_by): the minutes at the ends of a range. Filter on dimension; dimension outcome counts every event once (totals).';
