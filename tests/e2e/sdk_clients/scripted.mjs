// What both SDK suites share: the server run.sh started, and the scripted model's replies
// (tests/support/scripted_replies.cpp), which these texts must match byte for byte.
//   TERN_URL      the server, e.g. http://127.0.0.1:8000 (required)
//   TERN_API_KEY  the key it expects
//   TERN_MODEL    the scripted model's name (default qwen3-scripted)
// Run by hand: build/tests/tern_scripted_server --api-key k, then
//   TERN_URL=http://127.0.0.1:PORT TERN_API_KEY=k node --test
import assert from 'node:assert/strict';

assert.ok(process.env.TERN_URL, 'set TERN_URL to tern_scripted_server, e.g. http://127.0.0.1:8000');

export const url = process.env.TERN_URL;
export const apiKey = process.env.TERN_API_KEY ?? '';
export const model = process.env.TERN_MODEL || 'qwen3-scripted';

// The replies, keyed by the words of the last user message that pick them.
export const plainReply = 'Hello from tern: a plain answer with ünïcödé and an emoji 🌍. That is all.';
export const thinking = {
  prompt: 'Show your thinking: what is six times seven?',
  reasoning: 'Let me think… 6 × 7 = 42 ✓.',
  answer: 'The answer is 42 — naïve café ☕.',
};
export const weather = {
  prompt: 'What is the weather in Paris?',
  reasoning: 'The user asks about weather.',
  input: { city: 'Paris' },
};
export const twoCalls = {
  prompt: 'Weather in Paris and Tokyo please, two calls.',
  reasoning: 'Two cities, so two calls.',
  inputs: [{ city: 'Paris' }, { city: 'Tōkyō', unit: 'celsius' }],
};
// The model's text for a call it cannot make: JSON that never closes, or a function the request
// did not offer. Either comes back as plain text.
export const brokenCall = {
  prompt: 'Answer with a broken call.',
  text: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>',
};
export const unknownCall = {
  prompt: 'Call an unknown tool.',
  text: '<tool_call>\n{"name": "launch_rockets", "arguments": {"count": 3}}\n</tool_call>',
};
// Text, a call, then more text: the parser keeps the text before the call as written and drops
// the line break that follows </tool_call>.
export const checkFirst = {
  prompt: 'Check first, then tell me the weather.',
  before: 'Let me check that for you.\n',
  after: 'I asked the weather tool.',
  input: { city: 'Paris' },
};
export const longPrompt = 'Write something long.';
// The plain reply, failing after its first four tokens ("Hello from tern:").
export const failMidway = { prompt: 'Fail midway, please.', before: 'Hello from tern:' };
// After a tool's result: reasoning, then the result quoted.
export const afterTool = {
  reasoning: 'The tool answered; I can reply now.',
  answer: (result) => `The weather tool says: ${result}.`,
};
