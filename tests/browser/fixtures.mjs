// Scripted model replies for the chat tests (each checked valid by `bridle check` in
// chat.test.mjs before use, so a test never depends on a reply the contract refuses).

const SVG = `data:image/svg+xml;base64,${Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="240" height="120"><rect width="240" height="120" rx="12" fill="#7fa7e8"/><text x="120" y="68" font-size="22" text-anchor="middle" fill="#fff" font-family="sans-serif">calm</text></svg>',
).toString('base64')}`;

export const SAFE = { is_safe: true, danger_level: null, detected_concerns: [], requires_intervention: false, safety_message: null };

export function selfhelp(content, extra = {}) {
  return JSON.stringify({ type: 'response', safety: SAFE, content, progress: null, metadata: { model: 'scripted', language: 'en' }, ...extra });
}

export const FORM = {
  title: 'Your evenings',
  description: 'Two minutes, then I suggest a routine.',
  submit_label: 'Send answers',
  fields: [
    { id: 'rested', type: 'scale', label: 'How rested do you feel?', required: true, min: 1, max: 5, helpText: '1 = exhausted, 5 = fully rested' },
    { id: 'screens', type: 'radio', label: 'Screens before bed?', required: true, options: [{ value: 'yes', label: 'Yes' }, { value: 'no', label: 'No' }] },
    { id: 'drinks', type: 'checkbox', label: 'Evening drinks', options: [{ value: 'coffee', label: 'Coffee' }, { value: 'tea', label: 'Tea' }, { value: 'none', label: 'None' }] },
    { id: 'bedtime', type: 'select', label: 'Usual bedtime', options: [{ value: 'early', label: 'Before 22:00' }, { value: 'late', label: 'After 22:00' }] },
    { id: 'name', type: 'text', label: 'What should I call you?', placeholder: 'Your name', min: 2, max: 20 },
    { id: 'notes', type: 'textarea', label: 'Anything else?' },
    { id: 'hours', type: 'number', label: 'Hours of sleep', required: true, min: 0, max: 14 },
  ],
};

export const ALL_KINDS = selfhelp(
  {
    text_blocks: [
      { type: 'heading', content: 'Winding down for sleep' },
      { type: 'text', content: 'A **steady** routine helps. Try *one* change:\n\n- dim the lights\n- no screens after `21:00`\n\nRead [more about sleep](https://example.org/sleep).' },
      { type: 'info', content: 'Most adults need 7–9 hours of sleep.' },
      { type: 'warning', content: 'Avoid caffeine after noon.', style: 'bold' },
      { type: 'error', content: 'The sleep tracker could not be reached.' },
      { type: 'success', content: 'You kept your bedtime three nights in a row!', style: 'italic' },
      { type: 'code', content: 'bedtime = "22:30"\nwake = "06:30"' },
      { type: 'text', content: 'Sleep is the best meditation.', style: 'quote' },
      { type: 'text', content: 'breathe in 4, hold 7, out 8', style: 'code' },
    ],
    form: FORM,
    media: [
      { type: 'image', url: SVG, alt: 'A calm blue square', caption: 'Picture: calm' },
      { type: 'video', url: 'https://media.example.org/breathing.mp4', alt: 'Breathing exercise video', caption: 'Video: breathing' },
      { type: 'audio', url: 'https://media.example.org/rain.mp3', alt: 'Rain sounds', caption: 'Audio: rain' },
    ],
    suggestions: [{ text: 'Tell me more about sleep' }, { text: 'All of them', value: 'Tell me about all of them' }],
  },
  { progress: { percentage: 40, current_topic: 'sleep_habits', topics_covered: ['introduction'], topics_remaining: ['routine', 'relaxation'] } },
);

export const SHORT = selfhelp({ text_blocks: [{ type: 'text', content: 'Thanks, noted.' }] });

export const CARDS = `Let me understand your setup first.

Which notification channels should we enable? Pick up to 2.

1. Email — a daily digest (default)
2. SMS — for urgent alerts only
3. Push notifications
4. Slack

And which time zone should the daily summary use?

(A) UTC (default)
(B) The user's local time (recommended)`;

export const SCHEMA_PROPOSAL = `Here is a table for your job applications.

SCHEMA_PROPOSAL:
${JSON.stringify({
  mode: 'create',
  reasoning: 'One row per application; the stage as a select for filter tabs',
  table_name: 'Job Applications',
  table_description: 'Applications sent, with company, role, date and stage',
  operations: [
    { action: 'add', column: { name: 'Company', type: 'text', required: true } },
    { action: 'add', column: { name: 'Role', type: 'text' } },
    { action: 'add', column: { name: 'Applied on', type: 'date' } },
    { action: 'add', column: { name: 'Stage', type: 'select', options: ['Applied', 'Interview', 'Offer'], filterDisplay: 'tab' } },
  ],
  sample_rows: [
    { Company: 'Northwind', Role: 'Data Analyst', 'Applied on': '2026-10-02', Stage: 'Interview' },
    { Company: 'Fabrikam', Role: 'Backend Engineer', 'Applied on': '2026-10-09', Stage: 'Applied' },
  ],
})}`;

export const DATA_PROPOSAL = `Three changes to your rows:

DATA_PROPOSAL:
${JSON.stringify({
  reasoning: 'Add the new application, move Northwind on, drop the duplicate',
  operations: [
    { action: 'add', data: { Company: 'Contoso', Role: 'SRE', Stage: 'Applied' } },
    { action: 'update', row_id: 3, changes: { Stage: 'Offer' } },
    { action: 'delete', row_id: 7 },
  ],
})}`;

export const SUGGESTIONS = `Which stage should I filter by?

SUGGESTED_VALUES: ["Interview", "Offer"]

SUGGESTED_ACTIONS: [{"label": "Open filters", "action": "open_filters"}]`;

export const TOPIC = `<llmResponse>
  <response>A steady bedtime helps most people fall asleep sooner.</response>
  <analysis>
    <subject name="sleep-routine" description="Evening habits that make falling asleep easier" isNew="true">
      <keyword term="bedtime" confidence="0.92" />
      <keyword term="screen-time" confidence="0.85" />
      <keyword term="habit-building" confidence="0.7" />
    </subject>
    <summaryUpdate>The user wants to fall asleep faster.</summaryUpdate>
  </analysis>
</llmResponse>`;

export const WARNING = JSON.stringify({
  type: 'response',
  safety: { is_safe: true, danger_level: 'warning', detected_concerns: [], requires_intervention: false, safety_message: 'Exams can feel overwhelming; it is okay to ask for support.' },
  content: { text_blocks: [{ type: 'text', content: 'Let us look at what makes the exams so stressful.' }] },
  progress: null,
  metadata: { model: 'scripted', language: 'en' },
});

export const EMERGENCY = JSON.stringify({
  type: 'response',
  safety: { is_safe: false, danger_level: 'emergency', detected_concerns: ['suicide'], requires_intervention: true, safety_message: 'I am really glad you told me. You deserve help right now.' },
  content: { text_blocks: [{ type: 'warning', content: 'Please contact someone who can help you right now.' }] },
  progress: null,
  metadata: { model: 'scripted', language: 'en' },
});

const XSS_SCRIPT = '<script>window.__xss=1</script>';
const XSS_IMG = '<img src=x onerror="window.__xss=2">';
export const XSS_TEXTS = [XSS_SCRIPT, XSS_IMG];

export const XSS_SELFHELP = selfhelp({
  text_blocks: [
    { type: 'heading', content: `Heading ${XSS_SCRIPT}` },
    { type: 'text', content: `Text ${XSS_IMG} and [click me](javascript:window.__xss=3) and <a href="javascript:window.__xss=4">raw link</a>` },
    { type: 'info', content: `<iframe src="javascript:window.__xss=5"></iframe>` },
    { type: 'code', content: XSS_SCRIPT },
  ],
  form: {
    title: `Form ${XSS_IMG}`,
    fields: [{ id: 'x', type: 'radio', label: XSS_SCRIPT, helpText: XSS_IMG, options: [{ value: 'a', label: `<b onmouseover="window.__xss=6">bold?</b>` }] }],
  },
  media: [{ type: 'image', url: 'javascript:window.__xss=7', alt: XSS_IMG, caption: XSS_SCRIPT }],
  suggestions: [{ text: `<svg onload="window.__xss=8">` }],
});

export const XSS_MARKERS = `Streamed ${XSS_IMG} and ${XSS_SCRIPT} as text.

SUGGESTED_VALUES: [${JSON.stringify(`<img src=y onerror="window.__xss=10">`)}]`;
