-- A stored message bumps its conversation's `updated_at` inside the INSERT itself, so that
-- recording a message is one statement (one round trip to the writing connection, one
-- implicit transaction) instead of BEGIN, INSERT, UPDATE, COMMIT.

CREATE TRIGGER messages_bump_conversation AFTER INSERT ON messages
BEGIN
    UPDATE conversations SET updated_at = max(updated_at, NEW.created_at)
    WHERE id = NEW.conversation_id;
END;
