-- Views carry comments too, so a BI user listing tables sees what each one is for.
ALTER TABLE spend_hourly_by_mv MODIFY COMMENT 'Feeds spend_hourly_by from every insert into events: one row per event and dimension (agent, domain, url, category, network, outcome), summed per hour.';
ALTER TABLE spend_minutely_mv MODIFY COMMENT 'Feeds spend_minutely from every insert into events: spend and count per team and UTC minute.';
