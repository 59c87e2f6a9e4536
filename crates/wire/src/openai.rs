//! OpenAI Chat Completions (`POST /v1/chat/completions`): requests, responses, stream chunks,
//! errors.
