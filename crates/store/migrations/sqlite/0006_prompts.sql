-- Each distinct prompt stored once. The longest text of an attempt's request (in practice the
-- system prompt: the contract's instructions, ~10 KB, the same on every attempt under a
-- contract) is kept in `prompts`, named by its SHA-256; the message's request_payload has ""
-- in its place, and prompt_pointer (a JSON pointer) says where it goes back. Rows written
-- before this migration keep their whole request (both columns NULL).
CREATE TABLE prompts (
    hash TEXT NOT NULL PRIMARY KEY,
    text TEXT NOT NULL
) STRICT;

ALTER TABLE messages ADD COLUMN prompt_hash TEXT REFERENCES prompts (hash);
ALTER TABLE messages ADD COLUMN prompt_pointer TEXT;

-- Retention deletes a prompt once no request uses it.
CREATE INDEX messages_by_prompt ON messages (prompt_hash) WHERE prompt_hash IS NOT NULL;
