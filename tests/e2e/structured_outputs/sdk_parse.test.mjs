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
