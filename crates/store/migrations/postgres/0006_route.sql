-- Why an attempt went to its model when it was not the turn's own: 'escalated' (the model the
-- previous one escalates to, after its failed content attempts) or 'failover' (a model standing
-- in after a provider error). NULL: the turn's model, as asked.
ALTER TABLE messages ADD COLUMN route TEXT CHECK (route IN ('escalated', 'failover'));
