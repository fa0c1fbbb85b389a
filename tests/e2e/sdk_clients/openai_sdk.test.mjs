// The official openai npm client (major version 6) against tern's /v1/chat/completions, over the
// scripted Qwen3 model (scripted.mjs): tool calls streamed and not through the SDK's stream
// helpers, reasoning_content, two calls in a turn, malformed calls, runTools' round trip.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import OpenAI from 'openai';

import {
  afterTool, apiKey, brokenCall, checkFirst, failMidway, longPrompt, model, plainReply, thinking,
  twoCalls, unknownCall, url, weather,
} from './scripted.mjs';

const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 60_000 });

const weatherParameters = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  required: ['city'],
};
const tools = [{
  type: 'function',
  function: { name: 'get_weather', description: 'The current weather in a city', parameters: weatherParameters },
}];

const user = (text) => [{ role: 'user', content: text }];

// Call ids are random; each must look like OpenAI's, and the rest of the call must match.
function withoutIds(calls) {
  return calls.map((call) => {
    assert.match(call.id, /^call_[A-Za-z0-9]+$/);
    return { ...call, id: 'call_*' };
  });
}

function argumentsOf(calls) {
  return calls.map((call) => JSON.parse(call.function.arguments));
}

// Streams `params` with client.chat.completions.stream(). reasoning_content is not a field the SDK
// knows: its accumulator keeps only the last delta's value, so the whole reasoning is read from
// the raw chunks.
async function streamed(params) {
  const stream = client.chat.completions.stream(params);
  const chunks = [];
  const doneCalls = [];
  let content = '';
  stream.on('chunk', (chunk) => chunks.push(chunk));
  stream.on('content', (delta) => { content += delta; });
  stream.on('tool_calls.function.arguments.done', (call) => doneCalls.push(call));
  const completion = await stream.finalChatCompletion();
  const reasoning = chunks.map((c) => c.choices[0]?.delta?.reasoning_content ?? '').join('');
  return { completion, chunks, content, reasoning, doneCalls };
}

test('tool call, non-streamed: message.tool_calls, finish_reason tool_calls, reasoning_content', async () => {
  const completion = await client.chat.completions.create({ model, messages: user(weather.prompt), tools });
  const [choice] = completion.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.role, 'assistant');
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.reasoning_content, weather.reasoning);
  assert.deepEqual(withoutIds(choice.message.tool_calls), [{
    id: 'call_*', type: 'function', function: { name: 'get_weather', arguments: choice.message.tool_calls[0].function.arguments },
  }]);
  assert.deepEqual(argumentsOf(choice.message.tool_calls), [weather.input]);
  assert.ok(completion.usage.prompt_tokens > 0);
  assert.ok(completion.usage.completion_tokens > 0);
});

test('tool call, streamed through chat.completions.stream(): finalChatCompletion() equals the non-streamed message', async () => {
  const params = { model, messages: user(weather.prompt), tools, stream_options: { include_usage: true } };
  const whole = (await client.chat.completions.create({ ...params, stream_options: undefined })).choices[0];
  const { completion, chunks, content, reasoning, doneCalls } = await streamed(params);
  const [choice] = completion.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  assert.equal(content, '');
  assert.equal(reasoning, weather.reasoning);
  assert.ok(chunks.filter((c) => c.choices[0]?.delta?.reasoning_content).length > 1, 'reasoning streams per token');
  assert.deepEqual(withoutIds(choice.message.tool_calls), withoutIds(whole.message.tool_calls));
  assert.deepEqual(doneCalls.map((c) => [c.index, c.name, JSON.parse(c.arguments)]), [[0, 'get_weather', weather.input]]);
  // OpenAI's fragments: index, id, type and name first, then only arguments.
  const [first, ...rest] = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
  assert.equal(first.index, 0);
  assert.match(first.id, /^call_/);
  assert.equal(first.type, 'function');
  assert.equal(first.function.name, 'get_weather');
  for (const fragment of rest) {
    assert.deepEqual(Object.keys(fragment).sort(), ['function', 'index'], JSON.stringify(fragment));
    assert.deepEqual(Object.keys(fragment.function), ['arguments']);
  }
  assert.equal([first, ...rest].map((f) => f.function.arguments).join(''),
    whole.message.tool_calls[0].function.arguments);
  assert.ok(completion.usage.completion_tokens > 0, JSON.stringify(completion.usage));
});

test('two calls in one turn, streamed and not: indexes 0 and 1, multi-byte arguments intact', async () => {
  const params = { model, messages: user(twoCalls.prompt), tools };
  const whole = (await client.chat.completions.create(params)).choices[0];
  assert.equal(whole.finish_reason, 'tool_calls');
  assert.equal(whole.message.reasoning_content, twoCalls.reasoning);
  assert.deepEqual(argumentsOf(whole.message.tool_calls), twoCalls.inputs);
  assert.notEqual(whole.message.tool_calls[0].id, whole.message.tool_calls[1].id);

  const { completion, chunks, doneCalls } = await streamed(params);
  const [choice] = completion.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.deepEqual(withoutIds(choice.message.tool_calls), withoutIds(whole.message.tool_calls));
  assert.deepEqual(doneCalls.map((c) => c.index), [0, 1]);
  const indexes = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []).map((t) => t.index);
  assert.deepEqual([...new Set(indexes)], [0, 1]);
});

test('reasoning_content, streamed and not, then the answer as content', async () => {
  const params = { model, messages: user(thinking.prompt) };
  const whole = (await client.chat.completions.create(params)).choices[0];
  assert.equal(whole.finish_reason, 'stop');
  assert.equal(whole.message.reasoning_content, thinking.reasoning);
  assert.equal(whole.message.content, thinking.answer);
  assert.equal(whole.message.tool_calls, undefined);

  const { completion, content, reasoning } = await streamed(params);
  assert.equal(reasoning, thinking.reasoning);
  assert.equal(content, thinking.answer);
  assert.equal(completion.choices[0].message.content, thinking.answer);
  assert.equal(completion.choices[0].finish_reason, 'stop');
});

test('text around a call: the content holds both parts, the call is in tool_calls', async () => {
  const params = { model, messages: user(checkFirst.prompt), tools };
  const whole = (await client.chat.completions.create(params)).choices[0];
  assert.equal(whole.finish_reason, 'tool_calls');
  assert.equal(whole.message.content, checkFirst.before + checkFirst.after);
  assert.deepEqual(argumentsOf(whole.message.tool_calls), [checkFirst.input]);
  const { completion, content } = await streamed(params);
  assert.equal(content, whole.message.content);
  assert.deepEqual(withoutIds(completion.choices[0].message.tool_calls), withoutIds(whole.message.tool_calls));
});

test('a malformed call or an unknown function comes back as content with finish_reason stop', async () => {
  for (const { prompt, text } of [brokenCall, unknownCall]) {
    const params = { model, messages: user(prompt), tools };
    const whole = (await client.chat.completions.create(params)).choices[0];
    assert.equal(whole.finish_reason, 'stop');
    assert.equal(whole.message.content, text);
    assert.equal(whole.message.tool_calls, undefined);
    const { completion, content } = await streamed(params);
    assert.equal(content, text);
    assert.equal(completion.choices[0].finish_reason, 'stop');
    assert.equal(completion.choices[0].message.tool_calls, undefined);
  }
});

test('a plain answer with multi-byte characters is whole, streamed and not', async () => {
  const whole = (await client.chat.completions.create({ model, messages: user('Say hello.') })).choices[0];
  assert.equal(whole.message.content, plainReply);
  const { content, chunks } = await streamed({ model, messages: user('Say hello.') });
  assert.equal(content, plainReply);
  assert.ok(chunks.length > 10, 'one chunk per token');
});

test('tool round trip by hand: assistant tool_calls with content null, then a tool message', async () => {
  const first = (await client.chat.completions.create({ model, messages: user(weather.prompt), tools })).choices[0];
  const result = '{"temperature": "18 °C", "sky": "sunny"}';
  const messages = [
    ...user(weather.prompt),
    { role: 'assistant', content: null, tool_calls: first.message.tool_calls },
    { role: 'tool', tool_call_id: first.message.tool_calls[0].id, content: result },
  ];
  const answer = (await client.chat.completions.create({ model, messages, tools })).choices[0];
  assert.equal(answer.finish_reason, 'stop');
  assert.equal(answer.message.content, afterTool.answer(result));
  assert.equal(answer.message.reasoning_content, afterTool.reasoning);
});

test('runTools(): the SDK calls the function, sends its result back and gets the final answer', async () => {
  const calls = [];
  const runner = client.chat.completions.runTools({
    model,
    messages: user(weather.prompt),
    tools: [{
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: weatherParameters,
        parse: JSON.parse,
        function: (input) => {
          calls.push(input);
          return `22 °C in ${input.city}`;
        },
      },
    }],
  });
  const content = await runner.finalContent();
  assert.deepEqual(calls, [weather.input]);
  assert.equal(content, afterTool.answer('22 °C in Paris'));
  const roles = runner.messages.map((m) => m.role);
  assert.deepEqual(roles, ['user', 'assistant', 'tool', 'assistant']);
});

test('tool_choice none: the call is not parsed and stays content', async () => {
  const whole = (await client.chat.completions.create({
    model, messages: user(weather.prompt), tools, tool_choice: 'none',
  })).choices[0];
  assert.equal(whole.finish_reason, 'stop');
  assert.equal(whole.message.tool_calls, undefined);
  assert.match(whole.message.content, /^<tool_call>\n\{"name": "get_weather"/);
});

test('max_tokens: finish_reason length with completion_tokens equal to it', async () => {
  const params = { model, messages: user(longPrompt), max_tokens: 16, stream_options: { include_usage: true } };
  const whole = await client.chat.completions.create({ ...params, stream_options: undefined });
  assert.equal(whole.choices[0].finish_reason, 'length');
  assert.equal(whole.usage.completion_tokens, 16);
  const { completion, content } = await streamed(params);
  assert.equal(completion.choices[0].finish_reason, 'length');
  assert.equal(content, whole.choices[0].message.content);
  assert.equal(completion.usage.completion_tokens, 16);
});

test('stop: the text ends before the stop string, finish_reason stop', async () => {
  const params = { model, messages: user('Say hello.'), stop: ['emoji'] };
  const before = plainReply.slice(0, plainReply.indexOf('emoji'));
  const whole = (await client.chat.completions.create(params)).choices[0];
  assert.equal(whole.finish_reason, 'stop');
  assert.equal(whole.message.content, before);
  const { content } = await streamed(params);
  assert.equal(content, before);
});

test('a failure mid-stream reaches the stream helper as an APIError; not streamed it is a 500', async () => {
  const params = { model, messages: user(failMidway.prompt) };
  const stream = client.chat.completions.stream(params);
  let content = '';
  stream.on('content', (delta) => { content += delta; });
  await assert.rejects(stream.finalChatCompletion(),
    (error) => error instanceof OpenAI.APIError && /failed on purpose/.test(error.message));
  assert.equal(content, failMidway.before);
  await assert.rejects(client.chat.completions.create(params),
    (error) => error instanceof OpenAI.InternalServerError && error.status === 500);
});

test('errors: unknown model 404, wrong key 401, a tool_choice naming no function 400 naming the field', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages: user('Hi') }),
    (error) => error instanceof OpenAI.NotFoundError && error.status === 404);
  const stranger = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'not-the-key', maxRetries: 0 });
  await assert.rejects(stranger.chat.completions.create({ model, messages: user('Hi') }),
    (error) => error instanceof OpenAI.AuthenticationError && error.status === 401);
  await assert.rejects(
    client.chat.completions.stream({ model, messages: user(weather.prompt), tools, tool_choice: { type: 'function' } })
      .finalChatCompletion(),
    (error) => error instanceof OpenAI.BadRequestError && error.param === 'tool_choice.function.name');
});
