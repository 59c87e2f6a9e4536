-- One row the readiness probe writes (`Store::probe_write`): a store that cannot write (a full
-- disk, a read-only replica) fails it, though its reads still work.
CREATE TABLE store_health (
    id INTEGER PRIMARY KEY,
    checked_at BIGINT NOT NULL
);
