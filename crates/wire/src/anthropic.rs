//! Anthropic Messages (`POST /v1/messages`): requests, responses, stream events, errors.
