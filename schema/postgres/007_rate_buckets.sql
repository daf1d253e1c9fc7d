-- Rate limits across instances (issue 30): one token bucket per key holder and kind, shared by
-- every instance. An instance does not write here per request: it leases tokens in batches
-- (rate_lease) and spends them from memory, so the row is written a few times a second at most
-- per busy holder and instance, and what all instances admit together stays within the rate.
CREATE TABLE rate_buckets (
  holder_id  text NOT NULL,
  kind       text NOT NULL CHECK (kind IN ('requests', 'records')),
  tokens     double precision NOT NULL,   -- may be negative: a batch larger than the burst leaves a debt
  updated_at bigint NOT NULL,             -- Unix ms of the last refill
  PRIMARY KEY (holder_id, kind)
);

-- Takes `need` tokens (and up to `extra` more, only from what is there) from the bucket of `rate`
-- a second with a burst of one second's worth, refilled up to `now_ms`; a bucket not seen before
-- starts full. As TokenBucket (src/limits/token-bucket.ts): granted when the bucket holds
-- min(need, rate), which may leave it in debt. Returns what was granted (0: refused) and what is left.
CREATE FUNCTION rate_lease(p_holder text, p_kind text, p_rate double precision, p_need double precision, p_extra double precision, p_now bigint)
RETURNS TABLE (granted double precision, remaining double precision)
LANGUAGE plpgsql AS $$
DECLARE
  current double precision;
  at bigint;
  give double precision := 0;
BEGIN
  INSERT INTO rate_buckets (holder_id, kind, tokens, updated_at) VALUES (p_holder, p_kind, p_rate, p_now) ON CONFLICT DO NOTHING;
  SELECT b.tokens, b.updated_at INTO current, at FROM rate_buckets b WHERE b.holder_id = p_holder AND b.kind = p_kind FOR UPDATE;
  current := least(p_rate, current + greatest(0, p_now - at) * p_rate / 1000.0);
  IF current >= least(p_need, p_rate) THEN
    give := p_need + least(p_extra, greatest(0, current - p_need));
  END IF;
  UPDATE rate_buckets SET tokens = current - give, updated_at = greatest(at, p_now) WHERE holder_id = p_holder AND kind = p_kind;
  granted := give;
  remaining := current - give;
  RETURN NEXT;
END;
$$;
