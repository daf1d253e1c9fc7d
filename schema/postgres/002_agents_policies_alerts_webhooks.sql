-- Agents, policies, alerts and webhooks: the tables of schema/sqlite 002, 003, 004, 007, 011 and 012
-- as they stand, for the shared store. Times are Unix ms (bigint); money and observed values are
-- decimal strings (text), as in SQLite; flags are 0/1 integers, so one statement reads both stores.

-- Agents of a team. Created through the API, or discovered: the first event of an unknown agent_id
-- creates its row (name = the id), so agents seen in events are listed like created ones.
CREATE TABLE agents (
  team_id        text NOT NULL REFERENCES teams (id),
  external_id    text NOT NULL,            -- the agent_id of events; the id users see
  name           text NOT NULL,
  authorized_by  text,                     -- who authorised the agent; NULL when discovered
  created_at     bigint NOT NULL,
  created_via    text NOT NULL CHECK (created_via IN ('events', 'api')),
  last_event_at  bigint,                   -- the agent's latest event time; NULL before the first
  status         text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
  PRIMARY KEY (team_id, external_id)
);
CREATE INDEX agents_by_activity ON agents (team_id, coalesce(last_event_at, -1) DESC, external_id);

-- Budget policies. Limits are kept as the JSON the user sent (validated), amounts as decimal strings.
CREATE TABLE policies (
  id          text PRIMARY KEY,          -- "pol_" + 20 random base32 characters
  team_id     text NOT NULL REFERENCES teams (id),
  name        text NOT NULL,
  limits      text NOT NULL,             -- JSON array of {kind, amount, endpoint?}
  action      text NOT NULL CHECK (action IN ('flag', 'block')),
  timezone    text,                      -- IANA zone of daily windows; NULL = UTC
  active      integer NOT NULL CHECK (active IN (0, 1)),
  created_at  bigint NOT NULL,
  updated_at  bigint NOT NULL
);
CREATE INDEX policies_by_team ON policies (team_id, created_at DESC, id);

-- The agents a policy names (they need not have been seen yet). None: every agent of its team.
CREATE TABLE policy_agents (
  policy_id    text NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
  team_id      text NOT NULL,
  external_id  text NOT NULL,
  PRIMARY KEY (policy_id, external_id)
);
CREATE INDEX policy_agents_by_agent ON policy_agents (team_id, external_id);

-- Alerts: policy breaches, client-reported blocks and flags, anomalies, notices of the service
-- itself (system). One open alert per breach: further occurrences update it.
CREATE TABLE alerts (
  id                text PRIMARY KEY,      -- "alr_" + 20 random base32 characters
  team_id           text NOT NULL REFERENCES teams (id),
  dedup_key         text NOT NULL,         -- what makes two occurrences the same breach
  type              text NOT NULL CHECK (type IN ('violation', 'anomaly', 'system')),
  kind              text NOT NULL,         -- limit kind, client_blocked, client_flagged, spike, new_payee, loop, webhook_disabled
  severity          text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  status            text NOT NULL CHECK (status IN ('open', 'resolved')),
  agent_id          text NOT NULL,         -- empty for system alerts
  policy_id         text,
  window_start      bigint,
  window_end        bigint,
  observed          text,                  -- latest observed value (decimal string)
  limit_value       text,                  -- the limit or threshold it was compared with
  subject           text,                  -- endpoint pattern, URL, payee, domain, endpoint id
  details           text NOT NULL,         -- JSON object of kind-specific facts
  message           text NOT NULL,
  sample_event_ids  text NOT NULL,         -- JSON array, at most 10 event ids, first occurrences first
  count             bigint NOT NULL,
  first_seen        bigint NOT NULL,       -- event times
  last_seen         bigint NOT NULL,
  created_at        bigint NOT NULL,
  updated_at        bigint NOT NULL,
  resolved_at       bigint,
  resolution        text
);
-- At most one open alert per breach, whichever instance raises it; a resolved one does not block a new one.
CREATE UNIQUE INDEX alerts_open_once ON alerts (team_id, dedup_key) WHERE status = 'open';
CREATE INDEX alerts_by_team ON alerts (team_id, created_at DESC, id DESC);

-- Payees each agent has paid, so a first payment to a new payee stands out across restarts.
CREATE TABLE agent_payees (
  team_id     text NOT NULL,
  agent_id    text NOT NULL,
  payee       text NOT NULL,
  first_seen  bigint NOT NULL,
  PRIMARY KEY (team_id, agent_id, payee)
);

-- Webhook endpoints. url, secret and previous_secret are sealed (src/stores/secrets.ts).
CREATE TABLE webhook_endpoints (
  id                     text PRIMARY KEY,                    -- whk_…
  team_id                text NOT NULL REFERENCES teams (id),
  url                    text NOT NULL,
  description            text,
  events                 text NOT NULL,                       -- JSON array of event types
  format                 text NOT NULL CHECK (format IN ('standard', 'slack')),
  active                 integer NOT NULL DEFAULT 1,
  secret                 text,                                -- NULL for slack
  previous_secret        text,
  previous_secret_until  bigint,
  disabled_at            bigint,                              -- set when deliveries failed for 24 hours
  disabled_reason        text,
  created_at             bigint NOT NULL,
  updated_at             bigint NOT NULL,
  failing_since          bigint                               -- NULL: its last attempt succeeded, or none
);
CREATE INDEX webhook_endpoints_by_team ON webhook_endpoints (team_id, created_at);

-- The webhook outbox and delivery log: one row per event per endpoint, written in the same
-- transaction as the alert change that causes it.
CREATE TABLE webhook_deliveries (
  seq              bigserial PRIMARY KEY,
  id               text NOT NULL UNIQUE,               -- dlv_…
  team_id          text NOT NULL,
  endpoint_id      text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id         text NOT NULL,                      -- evt_…: the same for every endpoint and attempt
  event_type       text NOT NULL,
  payload          text NOT NULL,
  status           text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  bigint,
  last_attempt_at  bigint,
  last_status_code integer,
  last_latency_ms  integer,
  last_error       text,
  response_body    text,
  created_at       bigint NOT NULL,
  delivered_at     bigint
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, seq);
