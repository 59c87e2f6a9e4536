// The "Context for the next message" panel of the chat page: the page, the mode and the
// application's state (spec 03's current table: columns, visible rows, filters, sort) that the
// next message's turn runs under. The server merges what is sent over the conversation's own
// context and stores it with the message, so a demo can move a table chat from the tables list
// to a table, or a card thread from discovery to clarification to a normal answer, as an
// application would (docs/chat-page.md).
//
// Exports:
//   SAMPLE_TABLE                      the demo table "Sample table" fills in
//   contextPanel(onChange)            binds the panel's elements (#tc-…) →
//     load(conversationContext, last) shows the conversation's context and the last turn's
//                                     (page, mode and app_state that differ carry on)
//     read()                          {context} to send with the next message (null: nothing
//                                     beyond the conversation's), or {error} for bad JSON
//     appState()                      the application state the next turn runs under
//     describe()                      "page: … · mode: … · table: … (n rows)" for the header

const $ = (id) => document.getElementById(id);

export const SAMPLE_TABLE = {
  table: {
    id: 1,
    name: 'Job Applications',
    columns: [
      { name: 'Company', type: 'text' },
      { name: 'Role', type: 'text' },
      { name: 'Stage', type: 'select', options: ['Applied', 'Interview', 'Offer'] },
    ],
    rows: [
      { row_id: 3, Company: 'Northwind', Role: 'Backend engineer', Stage: 'Interview' },
      { row_id: 5, Company: 'Fabrikam', Role: 'Data analyst', Stage: 'Applied' },
      { row_id: 7, Company: 'Northwind', Role: 'Backend engineer', Stage: 'Interview' },
    ],
    row_count: 3,
    filters: [],
    sort: { column: 'Company', direction: 'asc' },
  },
};

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const FACTS = ['page', 'mode'];

// The rows of a table in an application state: `app_state.table.rows` (or `app_state.rows`).
export function tableRows(appState) {
  const table = isObject(appState?.table) ? appState.table : appState;
  return Array.isArray(table?.rows) ? table.rows.filter(isObject) : [];
}

export function contextPanel(onChange) {
  const ui = {
    root: $('turn-context'),
    page: $('tc-page'),
    mode: $('tc-mode'),
    state: $('tc-state'),
    sample: $('tc-sample'),
    clearState: $('tc-clear'),
    error: $('tc-error'),
  };
  let base = {};

  const parseState = () => {
    const text = ui.state.value.trim();
    if (!text) return { value: null };
    let value;
    try {
      value = JSON.parse(text);
    } catch {
      return { error: 'The application state is not valid JSON.' };
    }
    return isObject(value) ? { value } : { error: 'The application state must be a JSON object.' };
  };

  const panel = {
    load(conversationContext, last) {
      base = isObject(conversationContext) ? conversationContext : {};
      const previous = isObject(last) ? last : {};
      for (const key of FACTS) {
        const select = ui[key];
        const first = select.options[0];
        first.textContent = `(as started: ${typeof base[key] === 'string' && base[key] ? base[key] : 'none'})`;
        const carried = typeof previous[key] === 'string' && previous[key] !== base[key] ? previous[key] : '';
        select.value = [...select.options].some((o) => o.value === carried) ? carried : '';
      }
      const state = isObject(previous.app_state) ? previous.app_state : isObject(base.app_state) ? base.app_state : null;
      ui.state.value = state ? JSON.stringify(state, null, 2) : '';
      ui.error.textContent = '';
      ui.root.hidden = false;
    },
    read() {
      const parsed = parseState();
      if (parsed.error) {
        ui.error.textContent = parsed.error;
        ui.root.open = true;
        ui.state.focus();
        return { error: parsed.error };
      }
      ui.error.textContent = '';
      const context = {};
      for (const key of FACTS) if (ui[key].value) context[key] = ui[key].value;
      if (parsed.value) context.app_state = parsed.value;
      return { context: Object.keys(context).length ? context : null };
    },
    appState() {
      const parsed = parseState();
      if (parsed.value) return parsed.value;
      return isObject(base.app_state) ? base.app_state : null;
    },
    describe() {
      const facts = { ...base };
      for (const key of FACTS) if (ui[key].value) facts[key] = ui[key].value;
      const parts = Object.entries(facts)
        .filter(([k, v]) => k !== 'prompt' && (typeof v === 'string' || typeof v === 'number'))
        .map(([k, v]) => `${k}: ${v}`);
      const state = panel.appState();
      if (state) {
        const name = isObject(state.table) && typeof state.table.name === 'string' ? state.table.name : 'application state';
        const rows = tableRows(state).length;
        parts.push(`${name}${rows ? ` (${rows} row${rows === 1 ? '' : 's'})` : ''}`);
      }
      return parts.join(' · ');
    },
    hide() {
      ui.root.hidden = true;
    },
  };

  const changed = () => {
    if (!parseState().error) ui.error.textContent = '';
    onChange?.();
  };
  ui.page.addEventListener('change', changed);
  ui.mode.addEventListener('change', changed);
  ui.state.addEventListener('input', changed);
  ui.sample.addEventListener('click', () => {
    ui.state.value = JSON.stringify(SAMPLE_TABLE, null, 2);
    changed();
  });
  ui.clearState.addEventListener('click', () => {
    ui.state.value = '';
    changed();
  });
  return panel;
}
