-- Indexes for the statistics (`Store::stats`): the assistant messages stored in a time range
-- (of one contract, or of all), which name the turns to count; then each turn's messages.
-- Partial, because only assistant messages are ever looked up this way.

CREATE INDEX messages_assistant_by_created ON messages (created_at) WHERE role = 'assistant';
CREATE INDEX messages_assistant_by_contract ON messages (contract, created_at)
    WHERE role = 'assistant';
CREATE INDEX messages_by_turn ON messages (turn_id);
