// tern serve driven by the official `openai` npm client (major version 6), with node's built-in
// test runner. run.sh starts the server and sets the environment:
//   TERN_URL        the server, e.g. http://127.0.0.1:8000 (required)
//   TERN_API_KEY    the key the server expects ("" when it has none; then the 401 test skips)
//   TERN_MODEL      the served model's name (default tinystories-656k)
//   TERN_REFERENCE  reference/tinystories-656k.greedy.jsonl (absent: the greedy test skips)
// Run by hand: TERN_URL=http://127.0.0.1:8000 node --test
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

import OpenAI from 'openai';

const baseURL = `${process.env.TERN_URL ?? ''}/v1`;
const apiKey = process.env.TERN_API_KEY ?? '';
const model = process.env.TERN_MODEL || 'tinystories-656k';
const referencePath = process.env.TERN_REFERENCE ?? '';

assert.ok(process.env.TERN_URL, 'set TERN_URL to the server, e.g. http://127.0.0.1:8000');

// No retries: a 429 or 5xx must show up as the error it is, not be hidden by the client.
const client = new OpenAI({ baseURL, apiKey: apiKey || 'unused', maxRetries: 0, timeout: 120_000 });

const story = 'Once upon a time there was a little dog named';

// Collects a stream's chunks and checks OpenAI's chunk order: the finish reason comes on the
// last choice chunk, then the usage chunk when asked for.
async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

async function expectError(promise, ErrorClass, status) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ErrorClass, `${error?.constructor?.name}: ${error?.message}`);
    assert.equal(error.status, status);
    assert.equal(typeof error.error?.message, 'string');
    assert.ok(error.error.message.length > 0);
    assert.ok('type' in error.error && 'param' in error.error && 'code' in error.error,
      JSON.stringify(error.error));
    return error;
  }
  assert.fail(`expected ${status}, the request succeeded`);
}

test('GET /v1/models lists the model in OpenAI format', async () => {
  const models = [];
  for await (const entry of client.models.list()) models.push(entry);
  const entry = models.find((m) => m.id === model);
  assert.ok(entry, JSON.stringify(models));
  assert.equal(entry.object, 'model');
  assert.equal(entry.owned_by, 'tern');
  assert.equal(typeof entry.created, 'number');
  assert.ok(entry.max_model_len > 0, JSON.stringify(entry));

  const one = await client.models.retrieve(model);
  assert.equal(one.id, model);
  await expectError(client.models.retrieve('no-such-model'), OpenAI.NotFoundError, 404);
});

test('chat completion, not streamed', async () => {
  const completion = await client.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: 'Tell a story.' },
      { role: 'user', content: [{ type: 'text', text: story }] },
    ],
    max_tokens: 16,
    temperature: 0,
  });
  assert.equal(completion.object, 'chat.completion');
  assert.equal(completion.model, model);
  assert.equal(completion.choices.length, 1);
  const [choice] = completion.choices;
  assert.equal(choice.index, 0);
  assert.equal(choice.message.role, 'assistant');
  assert.equal(typeof choice.message.content, 'string');
  assert.ok(['stop', 'length'].includes(choice.finish_reason));
  assert.ok(completion.usage.prompt_tokens > 0);
  assert.ok(completion.usage.completion_tokens > 0 && completion.usage.completion_tokens <= 16);
  assert.equal(completion.usage.total_tokens,
    completion.usage.prompt_tokens + completion.usage.completion_tokens);
  assert.equal(typeof completion.usage.prompt_tokens_details?.cached_tokens, 'number');
});

test('chat completion, streamed, equals the non-streamed text', async () => {
  const request = {
    model,
    messages: [{ role: 'user', content: story }],
    max_tokens: 24,
    temperature: 0,
    ignore_eos: true,
  };
  const whole = await client.chat.completions.create(request);
  const chunks = await collect(await client.chat.completions.create({
    ...request, stream: true, stream_options: { include_usage: true },
  }));
  assert.ok(chunks.length >= 3);
  assert.equal(chunks[0].object, 'chat.completion.chunk');
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.completion_tokens, 24);
  const finish = chunks.at(-2);
  assert.equal(finish.choices[0].finish_reason, 'length');
  for (const chunk of chunks.slice(0, -2)) assert.equal(chunk.choices[0].finish_reason, null);
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(text, whole.choices[0].message.content);
  assert.ok(chunks.every((c) => c.id === chunks[0].id));
});

test('chat completion with n=2 gives two choices, streamed and not', async () => {
  const request = {
    model,
    messages: [{ role: 'user', content: story }],
    max_tokens: 8,
    n: 2,
    seed: 7,
  };
  const completion = await client.chat.completions.create(request);
  assert.deepEqual(completion.choices.map((c) => c.index).sort(), [0, 1]);
  // usage counts the tokens of both choices.
  assert.ok(completion.usage.completion_tokens >= 2 && completion.usage.completion_tokens <= 16,
    JSON.stringify(completion.usage));

  const chunks = await collect(await client.chat.completions.create({ ...request, stream: true }));
  const texts = ['', ''];
  const finished = [0, 0];
  for (const chunk of chunks) {
    for (const choice of chunk.choices) {
      texts[choice.index] += choice.delta.content ?? '';
      if (choice.finish_reason) finished[choice.index] += 1;
    }
  }
  assert.deepEqual(finished, [1, 1]);
});

test('completions: text, streamed, n=2, echo and logprobs', async () => {
  const completion = await client.completions.create({
    model,
    prompt: story,
    max_tokens: 12,
    temperature: 0,
    logprobs: 2,
    echo: true,
  });
  assert.equal(completion.object, 'text_completion');
  const [choice] = completion.choices;
  assert.ok(choice.text.startsWith(story), choice.text);
  assert.equal(choice.logprobs.tokens.length, choice.logprobs.token_logprobs.length);
  assert.ok(choice.logprobs.tokens.length >= 1);
  for (const logprob of choice.logprobs.token_logprobs.filter((x) => x !== null)) {
    assert.ok(logprob <= 0, String(logprob));
  }
  for (const top of choice.logprobs.top_logprobs.filter((x) => x !== null)) {
    assert.ok(Object.keys(top).length >= 1 && Object.keys(top).length <= 3, JSON.stringify(top));
  }

  const plain = await client.completions.create({ model, prompt: story, max_tokens: 12,
    temperature: 0 });
  const chunks = await collect(await client.completions.create({
    model, prompt: story, max_tokens: 12, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  }));
  const streamed = chunks.map((c) => c.choices[0]?.text ?? '').join('');
  assert.equal(streamed, plain.choices[0].text);
  assert.equal(chunks.at(-1).usage.completion_tokens, plain.usage.completion_tokens);

  const two = await client.completions.create({
    model, prompt: ['Once upon a time', 'The cat'], n: 2, max_tokens: 6, seed: 3,
  });
  assert.deepEqual(two.choices.map((c) => c.index).sort(), [0, 1, 2, 3]);
});

test('chat logprobs and top_logprobs', async () => {
  const completion = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: story }],
    max_tokens: 6,
    temperature: 0,
    logprobs: true,
    top_logprobs: 3,
  });
  const content = completion.choices[0].logprobs.content;
  assert.equal(content.length, completion.usage.completion_tokens);
  for (const entry of content) {
    assert.equal(typeof entry.token, 'string');
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 3);
    // Greedy: the chosen token is the most likely one.
    assert.ok(entry.top_logprobs[0].logprob >= entry.logprob - 1e-6);
  }
});

test('stop strings end the text before the stop string', async () => {
  const free = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 48,
    temperature: 0 });
  const text = free.choices[0].text;
  // Stop at the first word of length >= 3 that starts after a few characters of the output.
  const word = text.slice(4).match(/[A-Za-z]{3,}/)?.[0];
  assert.ok(word, text);
  const stopped = await client.completions.create({ model, prompt: 'Once upon a time',
    max_tokens: 48, temperature: 0, stop: [word, 'never-appears'] });
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  assert.equal(stopped.choices[0].text, text.slice(0, text.indexOf(word)));

  const chunks = await collect(await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 48,
    temperature: 0, stop: 'the', stream: true,
  }));
  const streamed = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.ok(!streamed.includes('the'), streamed);
});

test('greedy /v1/completions text equals the reference for every prompt', {
  skip: existsSync(referencePath) ? false : `needs ${referencePath || 'TERN_REFERENCE'}`,
}, async () => {
  const cases = readFileSync(referencePath, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(cases.length, 8);
  await Promise.all(cases.map(async (reference, index) => {
    const completion = await client.completions.create({
      model,
      prompt: reference.prompt_ids,
      max_tokens: 48,
      temperature: 0,
    });
    const [choice] = completion.choices;
    // greedy_text is the continuation as it reads after the prompt, as OpenAI and vLLM return
    // it: it keeps the leading space of a first token such as "▁always", which a decode of
    // greedy_ids on their own (what /detokenize does) drops.
    assert.equal(choice.text, reference.greedy_text, `prompt ${index} (${reference.prompt})`);
    assert.equal(choice.finish_reason, 'length');
    assert.equal(completion.usage.prompt_tokens, reference.prompt_ids.length);
    assert.equal(completion.usage.completion_tokens, 48);
  }));
});

test('errors: 404 model_not_found, 400 with param, context_length_exceeded', async () => {
  const missing = await expectError(client.chat.completions.create({
    model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }],
  }), OpenAI.NotFoundError, 404);
  assert.equal(missing.code, 'model_not_found');
  assert.equal(missing.param, 'model');

  const topP = await expectError(client.completions.create({ model, prompt: 'hi', top_p: 1.5 }),
    OpenAI.BadRequestError, 400);
  assert.equal(topP.param, 'top_p');

  const empty = await expectError(client.chat.completions.create({ model, messages: [] }),
    OpenAI.BadRequestError, 400);
  assert.equal(empty.param, 'messages');

  const role = await expectError(client.chat.completions.create({
    model, messages: [{ role: 'wizard', content: 'hi' }],
  }), OpenAI.BadRequestError, 400);
  assert.match(role.param ?? '', /^messages/);

  const tooMany = await expectError(client.completions.create({ model, prompt: 'hi',
    max_tokens: 100000 }), OpenAI.BadRequestError, 400);
  assert.equal(tooMany.code, 'context_length_exceeded');

  const negative = await expectError(client.completions.create({ model, prompt: 'hi',
    max_tokens: -1 }), OpenAI.BadRequestError, 400);
  assert.equal(negative.param, 'max_tokens');

  // A streamed request that fails before its first token is a plain HTTP error.
  await expectError(client.chat.completions.create({
    model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }], stream: true,
  }), OpenAI.NotFoundError, 404);
});

test('errors: 401 invalid_api_key with a wrong key', {
  skip: apiKey ? false : 'the server has no API keys (TERN_API_KEY is empty)',
}, async () => {
  const wrong = new OpenAI({ baseURL, apiKey: `${apiKey}-wrong`, maxRetries: 0 });
  const error = await expectError(wrong.models.list(), OpenAI.AuthenticationError, 401);
  assert.equal(error.code, 'invalid_api_key');
  await expectError(wrong.chat.completions.create({
    model, messages: [{ role: 'user', content: 'hi' }],
  }), OpenAI.AuthenticationError, 401);
});
