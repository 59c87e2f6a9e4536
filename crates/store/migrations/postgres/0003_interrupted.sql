-- An attempt that did not run to its end: 'aborted' (Bridle stopped the stream on a violation
-- no continuation could fix) or 'cancelled' (the client went away). NULL: it ran to its end.
ALTER TABLE messages ADD COLUMN interrupted TEXT CHECK (interrupted IN ('aborted', 'cancelled'));
