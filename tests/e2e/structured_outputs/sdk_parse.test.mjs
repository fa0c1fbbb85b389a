// The official openai npm SDK (v6): client.chat.completions.parse with
// response_format: zodResponseFormat(schema, name) sends a strict json_schema and parses the
// reply into message.parsed; every reply that ends with "stop" must parse and satisfy the Zod
// schema.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

import { apiKey, mapPool, model, url } from './common.mjs';

const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: apiKey || 'unused', maxRetries: 0, timeout: 120_000 });

const Event = z.object({
  name: z.string().max(20),
  day: z.enum(['monday', 'tuesday', 'wednesday', 'thursday', 'friday']),
  attendees: z.array(z.object({ first: z.string().max(12), age: z.number().int().min(0).max(120) })).max(3),
  confirmed: z.boolean(),
  note: z.string().max(16).nullable(),
});

test('chat.completions.parse with zodResponseFormat returns message.parsed matching the schema', async () => {
  const format = zodResponseFormat(Event, 'event');
  const seeds = Array.from({ length: 16 }, (_, i) => i);
  const outcomes = await mapPool(seeds, 16, async (seed) => {
    try {
      const completion = await client.chat.completions.parse({
        model,
        messages: [{ role: 'user', content: 'Describe an event.' }],
        response_format: format,
        seed,
        temperature: 1.0,
        max_tokens: 256,
      });
      return { seed, choice: completion.choices[0] };
    } catch (error) {
      // The SDK throws LengthFinishReasonError when the reply ran out of tokens before it could be
      // parsed; any other error is a failure.
      if (error?.constructor?.name === 'LengthFinishReasonError') return { seed, length: true };
      throw new Error(`seed ${seed}: ${error?.status ?? ''} ${error?.message}\n` +
        `request response_format ${JSON.stringify(format)}`, { cause: error });
    }
  });
  let parsed = 0;
  let lengths = 0;
  for (const o of outcomes) {
    if (o.length || o.choice.finish_reason === 'length') {
      lengths++;
      continue;
    }
    assert.equal(o.choice.finish_reason, 'stop', JSON.stringify(o));
    const message = o.choice.message;
    assert.ok(message.parsed && typeof message.parsed === 'object', `seed ${o.seed}: ${JSON.stringify(message)}`);
    const check = Event.safeParse(message.parsed);
    assert.ok(check.success, `seed ${o.seed}: ${message.content}\n${JSON.stringify(check.error?.issues)}`);
    assert.deepEqual(message.parsed, JSON.parse(message.content));
    parsed++;
  }
  console.log(`zodResponseFormat over ${seeds.length} seeds: ${parsed} parsed, ${lengths} ran out of tokens; ` +
    `e.g. ${outcomes.find((o) => o.choice?.message?.parsed)?.choice.message.content}`);
  assert.ok(parsed > 0, 'no reply ended with "stop" and parsed');
});

// The agent path: tools from zodFunction and tool_choice "required" hold the reply to a call of
// those tools, which the SDK parses into tool_calls[].function.parsed_arguments. The tools'
// prompt fills most of the model's 512-token context, so replies get 72 tokens and short strings.
test('chat.completions.parse with zodFunction tools and tool_choice required returns parsed arguments', async () => {
  const { zodFunction } = await import('openai/helpers/zod');
  const Weather = z.object({ city: z.string().max(6), unit: z.enum(['c', 'f']) });
  const Time = z.object({ zone: z.string().max(4) });
  const tools = [zodFunction({ name: 'get_weather', parameters: Weather }),
    zodFunction({ name: 'get_time', parameters: Time })];
  const ask = async (seed, toolChoice) => {
    try {
      return (await client.chat.completions.parse({
        model,
        messages: [{ role: 'user', content: 'Weather and time?' }],
        tools,
        tool_choice: toolChoice,
        // One call: the random model would otherwise keep adding calls to the end of its tokens.
        parallel_tool_calls: false,
        seed,
        temperature: 1.0,
        max_tokens: 72,
      })).choices[0];
    } catch (error) {
      if (error?.constructor?.name === 'LengthFinishReasonError') return { finish_reason: 'length' };
      throw error;
    }
  };
  const seeds = Array.from({ length: 8 }, (_, i) => i);
  const choices = await mapPool(seeds, 8, (seed) => ask(seed, 'required'));
  let calls = 0;
  let lengths = 0;
  for (const [i, choice] of choices.entries()) {
    if (choice.finish_reason === 'length') {
      lengths++;
      continue;
    }
    assert.equal(choice.finish_reason, 'tool_calls', `seed ${seeds[i]}: ${JSON.stringify(choice)}`);
    assert.ok(choice.message.tool_calls.length >= 1, JSON.stringify(choice));
    for (const call of choice.message.tool_calls) {
      assert.ok(['get_weather', 'get_time'].includes(call.function.name), JSON.stringify(call));
      const schema = call.function.name === 'get_weather' ? Weather : Time;
      const check = schema.safeParse(call.function.parsed_arguments);
      assert.ok(check.success, `seed ${seeds[i]}: ${call.function.arguments}`);
      calls++;
    }
  }
  console.log(`zodFunction tools with tool_choice required over ${seeds.length} seeds: ${calls} parsed calls, ` +
    `${lengths} ran out of tokens; e.g. ` +
    `${JSON.stringify(choices.find((c) => c.message?.tool_calls?.length)?.message.tool_calls[0].function)}`);
  assert.ok(calls > 0, 'no reply ended in a parsed tool call');

  // A named function: every call is of that one.
  for (const seed of [1, 2, 3]) {
    const choice = await ask(seed, { type: 'function', function: { name: 'get_time' } });
    if (choice.finish_reason === 'length') continue;
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    for (const call of choice.message.tool_calls) assert.equal(call.function.name, 'get_time');
  }
});
