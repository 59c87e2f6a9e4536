-- What a user message brought for its turn. `context` (JSON): the conversation's context merged
-- with the message's own (`page`, `mode`, `app_state`, …). `answer` (JSON): the question-card
-- answers the message is, by id (`[{question_id, option_ids, text}]`). NULL for attempts, for a
-- typed message (answer), and for user messages stored before either was kept.
ALTER TABLE messages ADD COLUMN context TEXT;
ALTER TABLE messages ADD COLUMN answer TEXT;
