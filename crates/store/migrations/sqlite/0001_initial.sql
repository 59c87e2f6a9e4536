-- Bridle's attempt store, SQLite flavour. Times are Unix milliseconds; JSON is stored as text;
-- booleans are 0/1 integers.

CREATE TABLE conversations (
    id         TEXT    NOT NULL PRIMARY KEY,
    user_id    TEXT    NOT NULL,
    contract   TEXT    NOT NULL,
    context    TEXT    NOT NULL,
    state      TEXT    NOT NULL DEFAULT '{}',
    status     TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'blocked')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX conversations_by_user ON conversations (user_id, created_at);
CREATE INDEX conversations_by_contract ON conversations (contract);
CREATE INDEX conversations_by_created ON conversations (created_at, id);

CREATE TABLE messages (
    id               INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    conversation_id  TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn_id          TEXT    NOT NULL,
    role             TEXT    NOT NULL CHECK (role IN ('user', 'assistant')),
    content          TEXT    NOT NULL,
    value            TEXT,
    is_validated     INTEGER NOT NULL CHECK (is_validated IN (0, 1)),
    is_fallback      INTEGER NOT NULL CHECK (is_fallback IN (0, 1)),
    attempt          INTEGER CHECK (attempt >= 1),
    contract         TEXT    NOT NULL,
    contract_version TEXT    NOT NULL,
    request_payload  TEXT,
    raw_response     TEXT,
    violations       TEXT    NOT NULL DEFAULT '[]',
    repairs          TEXT    NOT NULL DEFAULT '[]',
    provider         TEXT,
    model            TEXT,
    tokens_in        INTEGER CHECK (tokens_in >= 0),
    tokens_out       INTEGER CHECK (tokens_out >= 0),
    latency_ms       INTEGER CHECK (latency_ms >= 0),
    error            TEXT,
    created_at       INTEGER NOT NULL
) STRICT;

-- Unique so that safety events can reference (conversation_id, id): an event's message must
-- belong to the event's conversation.
CREATE UNIQUE INDEX messages_by_conversation ON messages (conversation_id, id);

CREATE TABLE safety_events (
    id              INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    message_id      INTEGER,
    level           TEXT    NOT NULL,
    concerns        TEXT    NOT NULL,
    action          TEXT    NOT NULL,
    notified_at     INTEGER,
    created_at      INTEGER NOT NULL,
    FOREIGN KEY (conversation_id, message_id) REFERENCES messages (conversation_id, id)
) STRICT;

CREATE INDEX safety_events_by_conversation ON safety_events (conversation_id, id);
