// contracts.js — fills a <datalist> with the contracts the server offers (GET /v1/contracts:
// name and description), so a page suggests what the server really has. Exports
// fillContracts(api, datalist): on any error the options already there stay.

import { el } from './dom.js';

/** Replaces the options of `datalist` with the server's contracts (name, description as label). */
export async function fillContracts(api, datalist) {
  if (!datalist) return;
  try {
    const body = await api.get('/v1/contracts');
    const items = Array.isArray(body?.items) ? body.items : [];
    if (items.length === 0) return;
    datalist.replaceChildren(
      ...items.map((c) => el('option', { value: String(c.name), label: `${c.name} — ${c.kind}: ${c.description ?? ''}` })),
    );
  } catch {
    // The built-in names written into the page stay as suggestions.
  }
}
