-- Each distinct prompt stored once, as in the SQLite store (its migration 6). The longest text
-- of an attempt's request (in practice the system prompt: the contract's instructions, ~10 KB,
-- the same on every attempt under a contract) is kept in `prompts`, named by its SHA-256; the
-- message's request_payload has "" in its place, and prompt_pointer (a JSON pointer) says where
-- it goes back. Rows written before this migration keep their whole request (both NULL).
--
-- Several gateways write and sweep at once. The foreign key is what makes that safe: a message
-- can only be committed while its prompt row exists (its check takes a KEY SHARE lock on it),
-- and a prompt row can only be deleted while no committed message names it (the same key,
-- checked when the delete commits). A writer that loses the race to a sweeper's delete gets a
-- foreign-key error on `messages_prompt_hash_fkey` and writes its prompt again; a sweeper that
-- loses it to a writer gets one too and leaves the prompt.
CREATE TABLE prompts (
    hash TEXT NOT NULL PRIMARY KEY,
    text TEXT NOT NULL
);

ALTER TABLE messages ADD COLUMN prompt_hash TEXT
    CONSTRAINT messages_prompt_hash_fkey REFERENCES prompts (hash);
ALTER TABLE messages ADD COLUMN prompt_pointer TEXT;

-- The sweeper looks for a prompt's last user.
CREATE INDEX messages_by_prompt ON messages (prompt_hash) WHERE prompt_hash IS NOT NULL;
