-- Analytics read the ragged ends of a range (under an hour) from events. Sorted by (team, day,
-- agent, time), such a read scanned the team's whole day; sorted by (team, hour, agent, time) it
-- reads about that hour, so its cost no longer grows with a team's daily volume. Queries must name
-- the hour (toStartOfHour(event_time)) for the index to narrow: the key is not derived from a
-- condition on event_time alone.
--
-- A sort key cannot be changed in place: build a sorted copy, swap it in, drop the old one, and
-- re-create the views that read events (a view stays bound to the table it was created on).
-- This runs at start-up before the server listens, so nothing is inserted meanwhile. Each step can
-- be re-run; if it stops between EXCHANGE and DROP, a re-run swaps the old table back and keeps
-- every row, sorted the old way.
DROP VIEW IF EXISTS spend_hourly_by_mv;
DROP VIEW IF EXISTS spend_minutely_mv;

CREATE TABLE IF NOT EXISTS events_by_hour AS events
ENGINE = MergeTree
PARTITION BY toYYYYMM(event_time)
ORDER BY (team_id, toStartOfHour(event_time), agent_id, event_time)
SETTINGS merge_selector_base = 20
COMMENT 'Audit records of paid calls made by agents, one row per record, deduplicated by (team_id, id) at ingest. Money is Decimal(38,18). Sorted by team and UTC hour: filter on team_id and toStartOfHour(event_time).';

INSERT INTO events_by_hour SELECT * FROM events WHERE (SELECT count() FROM events_by_hour) = 0;

EXCHANGE TABLES events AND events_by_hour;

DROP TABLE events_by_hour SYNC;

CREATE MATERIALIZED VIEW IF NOT EXISTS spend_hourly_by_mv TO spend_hourly_by AS
SELECT team_id, dim.1 AS dimension, toStartOfHour(event_time) AS hour, dim.2 AS key,
       sum(toDecimal256(amount, 18)) AS spend, count() AS events, max(amount) AS max_amount
FROM events
ARRAY JOIN [('agent', agent_id), ('domain', toString(domain)), ('url', endpoint), ('category', toString(category)),
            ('network', toString(network)), ('outcome', toString(policy_evaluation))] AS dim
GROUP BY team_id, dimension, hour, key;

CREATE MATERIALIZED VIEW IF NOT EXISTS spend_minutely_mv TO spend_minutely AS
SELECT team_id, toStartOfMinute(event_time) AS minute, sum(toDecimal256(amount, 18)) AS spend, count() AS events
FROM events
GROUP BY team_id, minute;

ALTER TABLE spend_hourly_by_mv MODIFY COMMENT 'Feeds spend_hourly_by from every insert into events: one row per event and dimension (agent, domain, url, category, network, outcome), summed per hour.';
ALTER TABLE spend_minutely_mv MODIFY COMMENT 'Feeds spend_minutely from every insert into events: spend and count per team and UTC minute.';
