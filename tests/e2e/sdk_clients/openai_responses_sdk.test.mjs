// The official openai npm client (major version 6) against tern's /v1/responses, over the
// scripted Qwen3 model (scripted.mjs): responses streamed and not (the SDK's ResponseStream
// accumulator rejects events out of order), reasoning and function_call items,
// previous_response_id with a function_call_output, stored responses, max_output_tokens.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import OpenAI from 'openai';

import {
  afterTool, apiKey, checkFirst, failMidway, longPrompt, model, plainReply, thinking, twoCalls, url,
  weather,
} from './scripted.mjs';

const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 60_000 });

const tools = [{
  type: 'function',
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
  },
  strict: false,
}];

// Item ids (rs_, msg_, fc_) and call ids are made per response; each must have its prefix, and
// the rest of the item must match. The SDK's stream helper adds `parsed` to each output_text part
// and `parsed_arguments` to each call (structured outputs); neither is tern's.
function withoutIds(output) {
  return output.map((item) => {
    const prefix = { reasoning: 'rs_', message: 'msg_', function_call: 'fc_' }[item.type];
    assert.ok(item.id.startsWith(prefix), JSON.stringify(item));
    const copy = { ...item, id: `${prefix}*` };
    if (item.type === 'message') copy.content = item.content.map(({ parsed, ...part }) => part);
    if (item.type === 'function_call') {
      assert.match(item.call_id, /^call_[A-Za-z0-9]+$/);
      copy.call_id = 'call_*';
      delete copy.parsed_arguments;
    }
    return copy;
  });
}

const reasoningItem = (text) => ({
  type: 'reasoning', id: 'rs_*', summary: [], content: [{ type: 'reasoning_text', text }],
});

// Streams `params` with client.responses.stream(), checking the event order OpenAI documents:
// sequence_number from 0 without gaps, response.created and response.in_progress first, each
// delta inside its item and content part, and a terminal event last.
async function streamed(params) {
  const stream = client.responses.stream(params);
  const events = [];
  let text = '';
  stream.on('event', (event) => events.push(structuredClone(event)));
  stream.on('response.output_text.delta', (event) => { text += event.delta; });
  const response = await stream.finalResponse();
  events.forEach((event, i) => assert.equal(event.sequence_number, i, event.type));
  assert.deepEqual(events.slice(0, 2).map((e) => e.type), ['response.created', 'response.in_progress']);
  assert.match(events.at(-1).type, /^response\.(completed|incomplete|failed)$/);
  const openItems = new Set();
  const openParts = new Set();
  for (const event of events.slice(2, -1)) {
    const item = event.output_index;
    const part = `${item}/${event.content_index}`;
    if (event.type === 'response.output_item.added') openItems.add(item);
    else if (event.type === 'response.output_item.done') {
      assert.ok(openItems.delete(item), `${event.type} of an item never added`);
    } else if (event.type === 'response.content_part.added') {
      assert.ok(openItems.has(item));
      openParts.add(part);
    } else if (event.type === 'response.content_part.done') {
      assert.ok(openParts.delete(part), `${event.type} of a part never added`);
    } else if (/text\.(delta|done)$/.test(event.type)) {
      assert.ok(openParts.has(part), `${event.type} outside its content part`);
    } else if (event.type.startsWith('response.function_call_arguments.')) {
      assert.ok(openItems.has(item), `${event.type} outside its item`);
    } else {
      assert.fail(`unexpected event ${event.type}`);
    }
  }
  assert.equal(openItems.size, 0, 'an item was never done');
  return { response, events, text };
}

// The Responses door is new; where this build lacks it, the suite says so rather than failing.
const probe = await fetch(`${url}/v1/responses`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
  body: '{}',
});
const absent = probe.status === 404 ? 'this build has no POST /v1/responses' : false;

test('responses.create: one message item, output_text, usage and status completed', { skip: absent }, async () => {
  const response = await client.responses.create({ model, input: 'Say hello.' });
  assert.match(response.id, /^resp_/);
  assert.equal(response.object, 'response');
  assert.equal(response.status, 'completed');
  assert.equal(response.model, model);
  assert.equal(response.output_text, plainReply);
  assert.deepEqual(withoutIds(response.output), [{
    type: 'message', id: 'msg_*', status: 'completed', role: 'assistant',
    content: [{ type: 'output_text', text: plainReply, annotations: [], logprobs: [] }],
  }]);
  assert.ok(response.usage.input_tokens > 0);
  assert.ok(response.usage.output_tokens > 10);
  assert.equal(response.usage.total_tokens, response.usage.input_tokens + response.usage.output_tokens);
});

test('responses.stream: deltas and finalResponse() equal the non-streamed response', { skip: absent }, async () => {
  const params = { model, instructions: 'Be brief.', input: 'Say hello.' };
  const whole = await client.responses.create(params);
  const { response, events, text } = await streamed(params);
  assert.equal(text, plainReply);
  assert.equal(response.output_text, plainReply);
  assert.ok(events.filter((e) => e.type === 'response.output_text.delta').length > 5, 'one delta per token');
  assert.equal(events.at(-1).type, 'response.completed');
  assert.deepEqual(withoutIds(response.output), withoutIds(whole.output));
  assert.deepEqual(response.usage, whole.usage);
  assert.equal(response.instructions, 'Be brief.');
});

test('reasoning then a message, streamed and not', { skip: absent }, async () => {
  const params = { model, input: thinking.prompt, reasoning: { effort: 'high' } };
  const whole = await client.responses.create(params);
  assert.equal(whole.output_text, thinking.answer);
  assert.deepEqual(withoutIds(whole.output)[0], reasoningItem(thinking.reasoning));
  // The tokens of the reasoning, counted apart from the answer's.
  const reasoningTokens = whole.usage.output_tokens_details.reasoning_tokens;
  assert.ok(reasoningTokens > 0 && reasoningTokens < whole.usage.output_tokens, `${reasoningTokens}`);
  const { response } = await streamed(params);
  assert.deepEqual(withoutIds(response.output), withoutIds(whole.output));
  assert.equal(response.usage.output_tokens_details.reasoning_tokens, reasoningTokens);
});

test('function_call items, one and two per response, streamed and not', { skip: absent }, async () => {
  for (const [prompt, reasoning, inputs] of [
    [weather.prompt, weather.reasoning, [weather.input]],
    [twoCalls.prompt, twoCalls.reasoning, twoCalls.inputs],
  ]) {
    const params = { model, input: prompt, tools };
    const whole = await client.responses.create(params);
    assert.equal(whole.status, 'completed');
    assert.equal(whole.output_text, '');
    const output = withoutIds(whole.output);
    assert.deepEqual(output[0], reasoningItem(reasoning));
    const calls = output.slice(1);
    assert.deepEqual(calls.map((c) => [c.type, c.name, c.status]),
      inputs.map(() => ['function_call', 'get_weather', 'completed']));
    assert.deepEqual(calls.map((c) => JSON.parse(c.arguments)), inputs);

    const { response, events } = await streamed(params);
    assert.deepEqual(withoutIds(response.output), output);
    const done = events.filter((e) => e.type === 'response.function_call_arguments.done');
    assert.deepEqual(done.map((e) => JSON.parse(e.arguments)), inputs);
  }
});

test('text around a call: a message item, the function_call, then another message', { skip: absent }, async () => {
  const params = { model, input: checkFirst.prompt, tools };
  const whole = await client.responses.create(params);
  const message = (text) => ({
    type: 'message', id: 'msg_*', status: 'completed', role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  });
  const output = withoutIds(whole.output);
  assert.deepEqual(output[0], message(checkFirst.before));
  assert.deepEqual([output[1].type, JSON.parse(output[1].arguments)], ['function_call', checkFirst.input]);
  assert.deepEqual(output[2], message(checkFirst.after));
  assert.equal(whole.output_text, checkFirst.before + checkFirst.after);
  const { response } = await streamed(params);
  assert.deepEqual(withoutIds(response.output), output);
});

test('previous_response_id: a function_call_output continues the stored response', { skip: absent }, async () => {
  const first = await client.responses.create({ model, input: weather.prompt, tools });
  const call = first.output.find((item) => item.type === 'function_call');
  assert.ok(call, JSON.stringify(first.output));
  const result = '18 °C and sunny';
  const params = {
    model,
    previous_response_id: first.id,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: result }],
    tools,
  };
  const answer = await client.responses.create(params);
  assert.equal(answer.previous_response_id, first.id);
  assert.equal(answer.output_text, afterTool.answer(result));
  assert.deepEqual(withoutIds(answer.output)[0], reasoningItem(afterTool.reasoning));
  // The scripted model reads half of a follow-up's prompt from the prefix cache.
  assert.ok(answer.usage.input_tokens_details.cached_tokens > 0, JSON.stringify(answer.usage));

  const { response } = await streamed(params);
  assert.deepEqual(withoutIds(response.output), withoutIds(answer.output));
  // A chain: the follow-up of the follow-up still sees the call's result.
  const third = await client.responses.create({ model, previous_response_id: answer.id, input: 'Say hello.' });
  assert.equal(third.output_text, plainReply);
});

test('stored responses: retrieve, delete, then 404; an unknown previous_response_id is a 404', { skip: absent }, async () => {
  const created = await client.responses.create({ model, input: 'Say hello.' });
  const fetched = await client.responses.retrieve(created.id);
  assert.equal(fetched.id, created.id);
  assert.equal(fetched.output_text, plainReply);
  assert.deepEqual(fetched.output, created.output);
  await client.responses.delete(created.id);
  await assert.rejects(client.responses.retrieve(created.id),
    (error) => error instanceof OpenAI.NotFoundError);
  await assert.rejects(client.responses.create({ model, previous_response_id: created.id, input: 'Hi' }),
    (error) => error instanceof OpenAI.NotFoundError && error.param === 'previous_response_id');
  const unstored = await client.responses.create({ model, input: 'Say hello.', store: false });
  await assert.rejects(client.responses.retrieve(unstored.id),
    (error) => error instanceof OpenAI.NotFoundError);
});

test('max_output_tokens: status incomplete, reason max_output_tokens, streamed and not', { skip: absent }, async () => {
  const params = { model, input: longPrompt, max_output_tokens: 16 };
  const whole = await client.responses.create(params);
  assert.equal(whole.status, 'incomplete');
  assert.deepEqual(whole.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(whole.usage.output_tokens, 16);
  const { response, events } = await streamed(params);
  assert.equal(events.at(-1).type, 'response.incomplete');
  assert.equal(response.status, 'incomplete');
  assert.equal(response.output_text, whole.output_text);
});

test('a failure mid-stream ends in response.failed with the error; not streamed it is a 500', { skip: absent }, async () => {
  const params = { model, input: failMidway.prompt };
  const { response, events, text } = await streamed(params);
  assert.equal(events.at(-1).type, 'response.failed');
  assert.equal(response.status, 'failed');
  assert.match(response.error.message, /failed on purpose/);
  assert.equal(text, failMidway.before);
  await assert.rejects(client.responses.create(params),
    (error) => error instanceof OpenAI.InternalServerError && error.status === 500);
});

test('errors: unknown model 404, wrong key 401, tool_choice allowed_tools 400 naming the field', { skip: absent }, async () => {
  await assert.rejects(client.responses.create({ model: 'no-such-model', input: 'Hi' }),
    (error) => error instanceof OpenAI.NotFoundError);
  const stranger = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'not-the-key', maxRetries: 0 });
  await assert.rejects(stranger.responses.create({ model, input: 'Hi' }),
    (error) => error instanceof OpenAI.AuthenticationError);
  await assert.rejects(client.responses.create({ model, input: weather.prompt, tools,
    tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } }),
    (error) => error instanceof OpenAI.BadRequestError && error.param === 'tool_choice');
});
