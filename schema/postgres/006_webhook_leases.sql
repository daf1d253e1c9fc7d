-- Webhook deliveries are sent by every instance (issue 30): one takes a due delivery by leasing it
-- (FOR UPDATE SKIP LOCKED, then leased_until = the end of its attempt's time), so no other attempts
-- it meanwhile; writing the outcome ends the lease. An instance that dies mid-attempt leaves the
-- lease to run out, and another sends the delivery again.
ALTER TABLE webhook_deliveries ADD COLUMN leased_until bigint;
