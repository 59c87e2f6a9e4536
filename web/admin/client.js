// client.js — the admin API routes, over the shared API client (../shared/api.js: Bearer key,
// JSON, errors as ApiError with the server's message and the HTTP status). The admin key lives
// in sessionStorage for this tab only.

import { ApiError, client, keyStore } from '../shared/api.js';

export { ApiError };

const keys = keyStore('bridle.adminKey');

export const storedKey = () => keys.get() || '';
export const storeKey = (key) => keys.set(key);
export const forgetKey = () => keys.clear();

const c = (key = storedKey()) => client(key);
const seg = encodeURIComponent;

export const api = {
  /** Checks a key: an admin route answers 200 for an admin key, 403 for a user key. */
  check: (key) => c(key).get('/admin/v1/conversations', { limit: 1 }),
  conversations: (filters) => c().get('/admin/v1/conversations', filters),
  conversation: (id) => c().get(`/admin/v1/conversations/${seg(id)}`),
  unblock: (id) => c().post(`/admin/v1/conversations/${seg(id)}/unblock`),
  replay: (messageId) => c().post(`/admin/v1/messages/${seg(messageId)}/replay`),
  stats: (params) => c().get('/admin/v1/stats', params),
  /** The shared client, for the routes every key may call (GET /v1/contracts). */
  plain: () => c(),
};
