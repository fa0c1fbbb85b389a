// The official @anthropic-ai/sdk against tern's /v1/messages, over the scripted Qwen3 model
// (scripted.mjs): messages streamed and not, stream.finalMessage(), thinking blocks, tool_use
// and the tool_result round trip, count_tokens, stop reasons, and errors by type.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import Anthropic from '@anthropic-ai/sdk';

import {
  afterTool, apiKey, brokenCall, checkFirst, failMidway, longPrompt, model, plainReply, thinking,
  twoCalls, unknownCall, url, weather,
} from './scripted.mjs';

// No retries: an error must show up as the error it is.
const client = new Anthropic({ baseURL: url, apiKey, maxRetries: 0, timeout: 60_000 });

const tools = [{
  name: 'get_weather',
  description: 'The current weather in a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
  },
}];

const user = (text) => [{ role: 'user', content: text }];

// Tool-use ids are random; each must look like Anthropic's, and the rest of the block must match.
function withoutIds(content) {
  return content.map((block) => {
    if (block.type !== 'tool_use') return block;
    assert.match(block.id, /^toolu_[A-Za-z0-9]+$/);
    return { ...block, id: 'toolu_*' };
  });
}

// Streams `params` with client.messages.stream(), checking Anthropic's event order: message_start,
// then per block content_block_start, its deltas, content_block_stop, then message_delta and
// message_stop. Returns the final message and the text each kind of delta carried.
async function streamed(params) {
  const stream = client.messages.stream(params);
  const events = [];
  const deltas = { text: '', thinking: '', json: [] };
  // A copy: the SDK builds its snapshot in message_start's message.
  stream.on('streamEvent', (event) => events.push(structuredClone(event)));
  stream.on('text', (text) => { deltas.text += text; });
  stream.on('thinking', (text) => { deltas.thinking += text; });
  stream.on('inputJson', (partial, snapshot) => deltas.json.push(snapshot));
  const message = await stream.finalMessage();

  assert.equal(events[0].type, 'message_start');
  assert.equal(events[0].message.role, 'assistant');
  assert.deepEqual(events[0].message.content, []);
  assert.equal(events.at(-2).type, 'message_delta');
  assert.equal(events.at(-1).type, 'message_stop');
  let open = null;
  let next = 0;
  for (const event of events.slice(1, -2)) {
    if (event.type === 'ping') continue;
    if (event.type === 'content_block_start') {
      assert.equal(open, null, 'a block started inside another');
      assert.equal(event.index, next);
      open = event.index;
    } else if (event.type === 'content_block_delta') {
      assert.equal(event.index, open);
    } else if (event.type === 'content_block_stop') {
      assert.equal(event.index, open);
      open = null;
      next += 1;
    } else {
      assert.fail(`unexpected event ${event.type} inside the message`);
    }
  }
  assert.equal(open, null, 'a block was never stopped');
  return { message, events, deltas };
}

async function expectError(promise, ErrorClass, status, type) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ErrorClass, `${error?.constructor?.name}: ${error?.message}`);
    assert.equal(error.status, status);
    assert.equal(error.type, type);
    assert.equal(error.error?.type, 'error', JSON.stringify(error.error));
    assert.equal(error.error.error.type, type);
    assert.ok(error.error.error.message.length > 0);
    return error;
  }
  assert.fail(`expected ${status} ${type}, the request succeeded`);
}

test('messages.create: one text block, end_turn and usage', async () => {
  const message = await client.messages.create({ model, max_tokens: 256, messages: user('Say hello.') });
  assert.match(message.id, /^msg_/);
  assert.equal(message.type, 'message');
  assert.equal(message.role, 'assistant');
  assert.equal(message.model, model);
  assert.deepEqual(message.content, [{ type: 'text', text: plainReply }]);
  assert.equal(message.stop_reason, 'end_turn');
  assert.equal(message.stop_sequence, null);
  assert.ok(message.usage.input_tokens > 0, JSON.stringify(message.usage));
  assert.equal(message.usage.cache_read_input_tokens, 0);
  assert.ok(message.usage.output_tokens > 10, JSON.stringify(message.usage));
});

test('messages.stream: the text deltas and finalMessage() equal the non-streamed message', async () => {
  const params = { model, max_tokens: 256, system: 'Be brief.', messages: user('Say hello.') };
  const whole = await client.messages.create(params);
  const { message, events, deltas } = await streamed(params);
  assert.equal(deltas.text, plainReply);
  assert.ok(events.filter((e) => e.type === 'content_block_delta').length > 5, 'one delta per token');
  assert.deepEqual(message.content, whole.content);
  assert.equal(message.stop_reason, 'end_turn');
  assert.deepEqual(message.usage, whole.usage);
  // message_start reports the prompt before any output.
  assert.equal(events[0].message.usage.input_tokens, whole.usage.input_tokens);
});

test('thinking: a thinking block before the text, streamed and not', async () => {
  const params = {
    model,
    max_tokens: 1024,
    thinking: { type: 'enabled', budget_tokens: 512 },
    messages: user(thinking.prompt),
  };
  const whole = await client.messages.create(params);
  assert.deepEqual(whole.content, [
    { type: 'thinking', thinking: thinking.reasoning, signature: '' },
    { type: 'text', text: thinking.answer },
  ]);
  assert.equal(whole.stop_reason, 'end_turn');

  const { message, deltas } = await streamed(params);
  assert.equal(deltas.thinking, thinking.reasoning);
  assert.equal(deltas.text, thinking.answer);
  assert.deepEqual(message.content, whole.content);
});

test('tool_use: input as an object and stop_reason tool_use, streamed and not', async () => {
  const params = { model, max_tokens: 1024, tools, messages: user(weather.prompt) };
  const whole = await client.messages.create(params);
  assert.equal(whole.stop_reason, 'tool_use');
  assert.deepEqual(withoutIds(whole.content), [
    { type: 'thinking', thinking: weather.reasoning, signature: '' },
    { type: 'tool_use', id: 'toolu_*', name: 'get_weather', input: weather.input },
  ]);

  const { message, deltas } = await streamed(params);
  assert.equal(message.stop_reason, 'tool_use');
  assert.deepEqual(withoutIds(message.content), withoutIds(whole.content));
  assert.deepEqual(deltas.json.at(-1), weather.input);
});

test('tools round trip: the tool_result gets the final answer; count_tokens equals its usage', async () => {
  const first = await client.messages.create({ model, max_tokens: 1024, tools, messages: user(weather.prompt) });
  const call = first.content.find((block) => block.type === 'tool_use');
  assert.ok(call, JSON.stringify(first.content));
  const result = '18 °C and sunny';
  const messages = [
    ...user(weather.prompt),
    { role: 'assistant', content: first.content },
    {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: result }] }],
    },
  ];
  const params = { model, max_tokens: 1024, tools, messages };
  const answer = await client.messages.create(params);
  assert.deepEqual(answer.content, [
    { type: 'thinking', thinking: afterTool.reasoning, signature: '' },
    { type: 'text', text: afterTool.answer(result) },
  ]);
  assert.equal(answer.stop_reason, 'end_turn');
  // The scripted model reads half of a follow-up's prompt from the prefix cache.
  assert.ok(answer.usage.cache_read_input_tokens > 0, JSON.stringify(answer.usage));

  const { message } = await streamed(params);
  assert.deepEqual(message.content, answer.content);
  assert.deepEqual(message.usage, answer.usage);

  const counted = await client.messages.countTokens({ model, tools, messages });
  const { input_tokens, cache_read_input_tokens, cache_creation_input_tokens } = answer.usage;
  assert.equal(counted.input_tokens, input_tokens + cache_read_input_tokens + cache_creation_input_tokens);
});

test('two tool_use blocks in one turn, in order, streamed and not', async () => {
  const params = { model, max_tokens: 1024, tools, messages: user(twoCalls.prompt) };
  const whole = await client.messages.create(params);
  assert.equal(whole.stop_reason, 'tool_use');
  assert.deepEqual(withoutIds(whole.content), [
    { type: 'thinking', thinking: twoCalls.reasoning, signature: '' },
    ...twoCalls.inputs.map((input) => ({ type: 'tool_use', id: 'toolu_*', name: 'get_weather', input })),
  ]);
  const ids = whole.content.filter((b) => b.type === 'tool_use').map((b) => b.id);
  assert.notEqual(ids[0], ids[1]);

  const { message } = await streamed(params);
  assert.deepEqual(withoutIds(message.content), withoutIds(whole.content));
});

test('text around a tool_use block keeps the order it was written in, streamed and not', async () => {
  const params = { model, max_tokens: 1024, tools, messages: user(checkFirst.prompt) };
  const whole = await client.messages.create(params);
  assert.equal(whole.stop_reason, 'tool_use');
  assert.deepEqual(withoutIds(whole.content), [
    { type: 'text', text: checkFirst.before },
    { type: 'tool_use', id: 'toolu_*', name: 'get_weather', input: checkFirst.input },
    { type: 'text', text: checkFirst.after },
  ]);
  const { message } = await streamed(params);
  assert.deepEqual(withoutIds(message.content), withoutIds(whole.content));
});

test('a malformed call or an unknown function comes back as text with end_turn', async () => {
  for (const { prompt, text } of [brokenCall, unknownCall]) {
    const params = { model, max_tokens: 1024, tools, messages: user(prompt) };
    const whole = await client.messages.create(params);
    assert.deepEqual(whole.content, [{ type: 'text', text }]);
    assert.equal(whole.stop_reason, 'end_turn');
    const { message, deltas } = await streamed(params);
    assert.equal(deltas.text, text);
    assert.deepEqual(message.content, whole.content);
  }
});

test('tool_choice none: the call is not parsed and stays text', async () => {
  const whole = await client.messages.create({
    model, max_tokens: 1024, tools, tool_choice: { type: 'none' }, messages: user(weather.prompt),
  });
  assert.equal(whole.stop_reason, 'end_turn');
  assert.equal(whole.content.at(-1).type, 'text');
  assert.match(whole.content.at(-1).text, /^<tool_call>\n\{"name": "get_weather"/);
});

test('max_tokens: the answer stops with stop_reason max_tokens', async () => {
  const params = { model, max_tokens: 16, messages: user(longPrompt) };
  const whole = await client.messages.create(params);
  assert.equal(whole.stop_reason, 'max_tokens');
  assert.equal(whole.usage.output_tokens, 16);
  assert.match(whole.content[0].text, /^Sentence number 1 goes on\./);
  const { message } = await streamed(params);
  assert.equal(message.stop_reason, 'max_tokens');
  assert.deepEqual(message.content, whole.content);
  assert.equal(message.usage.output_tokens, 16);
});

test('stop_sequences: stop_reason stop_sequence names the sequence, which is not output', async () => {
  const params = { model, max_tokens: 256, stop_sequences: ['never', 'emoji'], messages: user('Say hello.') };
  const whole = await client.messages.create(params);
  const before = plainReply.slice(0, plainReply.indexOf('emoji'));
  assert.deepEqual(whole.content, [{ type: 'text', text: before }]);
  assert.equal(whole.stop_reason, 'stop_sequence');
  assert.equal(whole.stop_sequence, 'emoji');
  const { message, deltas } = await streamed(params);
  assert.equal(deltas.text, before);
  assert.equal(message.stop_reason, 'stop_sequence');
  assert.equal(message.stop_sequence, 'emoji');
});

test('count_tokens equals the usage of the same request, with system and tools', async () => {
  const params = { model, system: [{ type: 'text', text: 'You are terse.' }], tools, messages: user('Say hello.') };
  const counted = await client.messages.countTokens(params);
  const message = await client.messages.create({ ...params, max_tokens: 64 });
  assert.ok(counted.input_tokens > 0);
  assert.equal(counted.input_tokens,
    message.usage.input_tokens + message.usage.cache_read_input_tokens + message.usage.cache_creation_input_tokens);
});

test('beta.messages (?beta=true) answers as messages does', async () => {
  const message = await client.beta.messages.create({ model, max_tokens: 256, messages: user('Say hello.') });
  assert.deepEqual(message.content, [{ type: 'text', text: plainReply }]);
  const counted = await client.beta.messages.countTokens({ model, messages: user('Say hello.') });
  assert.equal(counted.input_tokens, message.usage.input_tokens);
});

test('a failure mid-stream is an error event, thrown as api_error; not streamed it is a 500', async () => {
  const params = { model, max_tokens: 256, messages: user(failMidway.prompt) };
  const stream = client.messages.stream(params);
  let text = '';
  stream.on('text', (delta) => { text += delta; });
  await assert.rejects(stream.finalMessage(), (error) => {
    assert.ok(error instanceof Anthropic.APIError, `${error?.constructor?.name}: ${error?.message}`);
    assert.equal(error.type, 'api_error');
    assert.equal(error.error.error.type, 'api_error');
    return true;
  });
  assert.equal(text, failMidway.before);
  await expectError(client.messages.create(params), Anthropic.InternalServerError, 500, 'api_error');
});

test('errors by type: invalid_request_error, not_found_error, authentication_error', async () => {
  const missing = await expectError(
    client.messages.create({ model, messages: user('Say hello.') }),
    Anthropic.BadRequestError, 400, 'invalid_request_error');
  assert.match(missing.error.error.message, /max_tokens/);
  await expectError(
    client.messages.create({
      model,
      max_tokens: 64,
      messages: [{
        role: 'user',
        content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }],
      }],
    }),
    Anthropic.BadRequestError, 400, 'invalid_request_error');
  await expectError(
    client.messages.create({ model: 'no-such-model', max_tokens: 64, messages: user('Say hello.') }),
    Anthropic.NotFoundError, 404, 'not_found_error');
  await expectError(
    client.messages.countTokens({ model: 'no-such-model', messages: user('Say hello.') }),
    Anthropic.NotFoundError, 404, 'not_found_error');
  const stranger = new Anthropic({ baseURL: url, apiKey: 'not-the-key', maxRetries: 0 });
  await expectError(
    stranger.messages.create({ model, max_tokens: 64, messages: user('Say hello.') }),
    Anthropic.AuthenticationError, 401, 'authentication_error');
  // A streamed request fails before the stream starts, with the same error.
  await expectError(
    stranger.messages.stream({ model, max_tokens: 64, messages: user('Say hello.') }).finalMessage(),
    Anthropic.AuthenticationError, 401, 'authentication_error');
});
