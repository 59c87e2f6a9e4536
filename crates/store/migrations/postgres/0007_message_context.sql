-- A user message's context for its turn (JSON): the conversation's merged with what the message
-- brought (`page`, `mode`, `app_state`, …). NULL for attempts, and for user messages stored
-- before contexts were kept per message (their turn used the conversation's).
ALTER TABLE messages ADD COLUMN context JSONB;
