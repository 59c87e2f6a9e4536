-- Retention: when a message's request_payload and raw_response were purged (Unix ms). NULL: never
-- purged. The validation outcome (content, value, violations, repairs, flags) is always kept.
ALTER TABLE messages ADD COLUMN payload_purged_at INTEGER;
