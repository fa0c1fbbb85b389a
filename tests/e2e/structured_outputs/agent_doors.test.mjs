// The agent protocols' doors with structured outputs: Anthropic's Messages API (tool_choice any
// and tool, output_format) and OpenAI's Responses API (tool_choice required and a named function,
// text.format json_schema). Each forced call names an offered tool with input valid for its
// schema; each formatted answer is JSON valid for its schema.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import Ajv2020 from 'ajv/dist/2020.js';

import { model, post } from './common.mjs';

const ajv = new Ajv2020({ strict: false });
const lookup = { type: 'object', properties: { q: { type: 'string', maxLength: 8 },
  limit: { type: 'integer', minimum: 1, maximum: 5 } }, required: ['q', 'limit'] };
const clock = { type: 'object', properties: { zone: { enum: ['utc', 'cet'] } }, required: ['zone'] };
const answer = { type: 'object', properties: { ok: { type: 'boolean' },
  items: { type: 'array', items: { type: 'integer' }, maxItems: 3 } }, required: ['ok', 'items'] };
const schemas = { lookup, clock };

test('Anthropic tool_choice any and tool force a tool_use block valid for its input_schema', async () => {
  const tools = [{ name: 'lookup', input_schema: lookup }, { name: 'clock', input_schema: clock }];
  let checked = 0;
  for (const [seed, toolChoice] of [[1, { type: 'any' }], [2, { type: 'any' }], [3, { type: 'tool', name: 'clock' }]]) {
    const response = await post('/v1/messages', {
      model, max_tokens: 72, temperature: 1, seed, tools, tool_choice: { ...toolChoice, disable_parallel_tool_use: true },
      messages: [{ role: 'user', content: 'Use a tool.' }],
    });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    if (response.body.stop_reason === 'max_tokens') continue;
    assert.equal(response.body.stop_reason, 'tool_use', JSON.stringify(response.body));
    const uses = response.body.content.filter((block) => block.type === 'tool_use');
    assert.equal(uses.length, 1, JSON.stringify(response.body));
    if (toolChoice.type === 'tool') assert.equal(uses[0].name, 'clock');
    assert.ok(ajv.validate(schemas[uses[0].name], uses[0].input), JSON.stringify(uses[0]));
    checked++;
  }
  assert.ok(checked > 0, 'every answer ran out of tokens');
});

test('Anthropic output_format json_schema: the text is JSON valid for the schema', async () => {
  const response = await post('/v1/messages', {
    model, max_tokens: 96, temperature: 1, seed: 4, output_format: { type: 'json_schema', schema: answer },
    messages: [{ role: 'user', content: 'Answer.' }],
  });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  assert.equal(response.body.stop_reason, 'end_turn', JSON.stringify(response.body));
  assert.ok(ajv.validate(answer, JSON.parse(response.body.content[0].text)), response.body.content[0].text);
});

test('Responses tool_choice required and a named function force a function_call valid for its parameters', async () => {
  const tools = [{ type: 'function', name: 'lookup', parameters: lookup },
    { type: 'function', name: 'clock', parameters: clock }];
  let checked = 0;
  for (const [seed, toolChoice] of [[5, 'required'], [6, { type: 'function', name: 'lookup' }]]) {
    const response = await post('/v1/responses', {
      model, max_output_tokens: 72, temperature: 1, seed, tools, tool_choice: toolChoice,
      parallel_tool_calls: false, input: 'Use a tool.',
    });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.deepEqual(response.body.tool_choice, toolChoice);
    if (response.body.status === 'incomplete') continue;
    const calls = response.body.output.filter((item) => item.type === 'function_call');
    assert.equal(calls.length, 1, JSON.stringify(response.body));
    if (typeof toolChoice === 'object') assert.equal(calls[0].name, 'lookup');
    assert.ok(ajv.validate(schemas[calls[0].name], JSON.parse(calls[0].arguments)), calls[0].arguments);
    checked++;
  }
  assert.ok(checked > 0, 'every answer ran out of tokens');
});

test('Responses text.format json_schema: the output text is JSON valid for the schema, and echoed', async () => {
  const format = { type: 'json_schema', name: 'answer', strict: true, schema: answer };
  const response = await post('/v1/responses', {
    model, max_output_tokens: 96, temperature: 1, seed: 7, text: { format }, input: 'Answer.',
  });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  assert.deepEqual(response.body.text.format, format);
  const message = response.body.output.find((item) => item.type === 'message');
  assert.ok(ajv.validate(answer, JSON.parse(message.content[0].text)), message.content[0].text);
});
