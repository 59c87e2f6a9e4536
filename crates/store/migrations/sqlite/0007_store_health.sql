-- One row the readiness probe writes (`Store::probe_write`): a store that cannot write (a full
-- or read-only disk) fails it, though its reads still work.
CREATE TABLE store_health (
    id INTEGER PRIMARY KEY,
    checked_at INTEGER NOT NULL
);
