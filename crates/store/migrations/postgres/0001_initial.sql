-- Bridle's attempt store, PostgreSQL flavour. Times are Unix milliseconds (BIGINT) so that
-- filters and ordering mean the same as in SQLite; JSON is JSONB.

CREATE TABLE conversations (
    id         TEXT    NOT NULL PRIMARY KEY,
    user_id    TEXT    NOT NULL,
    contract   TEXT    NOT NULL,
    context    JSONB   NOT NULL,
    state      JSONB   NOT NULL DEFAULT '{}',
    status     TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'blocked')),
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL
);

CREATE INDEX conversations_by_user ON conversations (user_id, created_at);
CREATE INDEX conversations_by_contract ON conversations (contract);
CREATE INDEX conversations_by_created ON conversations (created_at, id);

CREATE TABLE messages (
    id               BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id  TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn_id          TEXT    NOT NULL,
    role             TEXT    NOT NULL CHECK (role IN ('user', 'assistant')),
    content          TEXT    NOT NULL,
    value            JSONB,
    is_validated     BOOLEAN NOT NULL,
    is_fallback      BOOLEAN NOT NULL,
    attempt          INTEGER CHECK (attempt >= 1),
    contract         TEXT    NOT NULL,
    contract_version TEXT    NOT NULL,
    request_payload  JSONB,
    raw_response     JSONB,
    violations       JSONB   NOT NULL DEFAULT '[]',
    repairs          JSONB   NOT NULL DEFAULT '[]',
    provider         TEXT,
    model            TEXT,
    tokens_in        BIGINT  CHECK (tokens_in >= 0),
    tokens_out       BIGINT  CHECK (tokens_out >= 0),
    latency_ms       BIGINT  CHECK (latency_ms >= 0),
    error            TEXT,
    created_at       BIGINT  NOT NULL
);

-- Unique so that safety events can reference (conversation_id, id): an event's message must
-- belong to the event's conversation.
CREATE UNIQUE INDEX messages_by_conversation ON messages (conversation_id, id);

CREATE TABLE safety_events (
    id              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    message_id      BIGINT,
    level           TEXT    NOT NULL,
    concerns        JSONB   NOT NULL,
    action          TEXT    NOT NULL,
    notified_at     BIGINT,
    created_at      BIGINT  NOT NULL,
    FOREIGN KEY (conversation_id, message_id) REFERENCES messages (conversation_id, id)
);

CREATE INDEX safety_events_by_conversation ON safety_events (conversation_id, id);
