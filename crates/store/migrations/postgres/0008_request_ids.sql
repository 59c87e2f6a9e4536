-- The ids of the HTTP request a message was written for: `request_id` (the `x-request-id` the
-- gateway answered with: the caller's when it sent a sane one, else generated) and `trace_id`
-- (the W3C trace id, 32 lowercase hex digits, from the caller's `traceparent` or the gateway's
-- own trace). NULL for messages stored before they were kept, or written outside a request.
ALTER TABLE messages ADD COLUMN request_id TEXT;
ALTER TABLE messages ADD COLUMN trace_id TEXT;
-- The admin console finds a conversation by the request id a user quotes.
CREATE INDEX messages_request_id ON messages (request_id) WHERE request_id IS NOT NULL;
