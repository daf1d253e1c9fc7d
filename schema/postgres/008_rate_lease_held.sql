-- rate_lease counted only the shared bucket: an instance holding a few leased tokens (a precheck's
-- lease before the body was read) saw a full bucket as short of a batch larger than the burst,
-- which one instance alone admits (TokenBucket). This one is told what the instance already holds
-- toward the request (`p_held`): the bucket counts as holding that too. The six-argument version
-- stays for instances of the previous release during a rolling upgrade.
CREATE FUNCTION rate_lease(p_holder text, p_kind text, p_rate double precision, p_need double precision, p_extra double precision, p_held double precision, p_now bigint)
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
  -- As TokenBucket: the request (held + need) is admitted when the bucket, with what is held of it,
  -- holds min(held + need, rate); it may then go into debt.
  IF current + p_held >= least(p_need + p_held, p_rate) THEN
    give := p_need + least(p_extra, greatest(0, current - p_need));
  END IF;
  UPDATE rate_buckets SET tokens = current - give, updated_at = greatest(at, p_now) WHERE holder_id = p_holder AND kind = p_kind;
  granted := give;
  remaining := current - give;
  RETURN NEXT;
END;
$$;
