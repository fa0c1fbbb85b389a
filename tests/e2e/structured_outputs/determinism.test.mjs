// Greedy (temperature 0) constrained decoding does not depend on what else is in the batch: one
// json_schema request sent alone returns, byte for byte, what it returns while 15 other, different
// constrained requests (schemas, regexes, choices, GBNF, sampled at temperature 1.0) decode
// beside it.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { chatBody, choicesOf, post, readHere } from './common.mjs';

const target = chatBody({
  response_format: {
    type: 'json_schema',
    json_schema: {
      name: 'profile',
      strict: true,
      schema: {
        type: 'object',
        properties: {
          id: { type: 'integer', minimum: 0, maximum: 1000000 },
          user: { type: 'string', minLength: 1, maxLength: 24 },
          tags: { type: 'array', items: { type: 'string', maxLength: 10 }, maxItems: 4 },
          score: { type: 'number' },
          active: { type: 'boolean' },
          role: { enum: ['admin', 'editor', 'viewer'] },
        },
        required: ['id', 'user', 'tags', 'score', 'active', 'role'],
        additionalProperties: false,
      },
    },
  },
  temperature: 0,
  max_tokens: 200,
});

const calculator = readHere('calculator.gbnf');
const tinyLanguage = readHere('tiny_language.gbnf');

// 15 different constrained requests, each sampled, to decode beside the target.
function neighbours(round) {
  const constraints = [
    { response_format: { type: 'json_object' } },
    { structured_outputs: { regex: '[a-z]{3,8}@[a-z]{2,5}\\.(com|org)' } },
    { structured_outputs: { choice: ['alpha', 'beta', 'gamma'] } },
    { structured_outputs: { grammar: calculator } },
    { structured_outputs: { grammar: tinyLanguage } },
    { guided_json: { type: 'array', items: { type: 'integer' }, maxItems: 40 } },
    { guided_regex: '\\d{4}-\\d{2}-\\d{2}' },
    { guided_choice: ['yes', 'no'] },
    { structured_outputs: { json: { type: 'object', properties: { s: { type: 'string' } }, required: ['s'] } } },
    { response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'number' } } } },
    { json_schema: { type: 'object', properties: { a: { type: 'array', items: { type: 'boolean' } } } } },
    { grammar: tinyLanguage },
    { structured_outputs: { regex: '(ab|cd)+x?' } },
    { guided_grammar: calculator },
    { structured_outputs: { json: { type: 'string', maxLength: 200 } } },
  ];
  return constraints.map((fields, i) => chatBody({ ...fields, seed: 100 * round + i, temperature: 1.0, max_tokens: 256 }));
}

async function run(request) {
  const response = await post('/v1/chat/completions', request);
  const [choice] = choicesOf(request, response);
  return choice;
}

test('greedy constrained output alone equals the output beside 15 other constrained requests', async () => {
  const alone = await run(target);
  console.log(`alone (${alone.finish_reason}): ${JSON.stringify(alone.text)}`);
  assert.ok(alone.text.length > 0);
  // Three rounds, the target entering first, in the middle and last among its neighbours.
  for (const [round, position] of [[1, 0], [2, 7], [3, 15]]) {
    const requests = neighbours(round);
    requests.splice(position, 0, target);
    const results = await Promise.all(requests.map(run));
    const beside = results[position];
    assert.equal(beside.text, alone.text, `round ${round}: the output changed beside other requests`);
    assert.equal(beside.finish_reason, alone.finish_reason);
    assert.equal(new Set(results.map((r) => r.text)).size > 2, true, 'the neighbours should differ');
  }
});
