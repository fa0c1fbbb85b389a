// Constraints the server cannot honour are HTTP 400s with an OpenAI error body
// {"error": {"message", "type", "param", "code"}} whose message says where the problem is (the
// keyword and JSON pointer, the regex offset, the GBNF line and column) and whose param names the
// request field; the server keeps serving afterwards.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { chatBody, choicesOf, describe, model, post } from './common.mjs';

const schemaFormat = (schema) => ({ type: 'json_schema', json_schema: { name: 'test', schema, strict: true } });

const cases = [
  {
    name: 'a schema keyword the server does not support (not)',
    fields: { response_format: schemaFormat({ type: 'object', properties: { a: { not: { type: 'string' } } } }) },
    param: 'response_format',
    message: [/\bnot\b/, /\/properties\/a/],
  },
  {
    name: 'the same schema through structured_outputs.json',
    fields: { structured_outputs: { json: { type: 'object', properties: { a: { not: { type: 'string' } } } } } },
    param: 'structured_outputs.json',
    message: [/\bnot\b/, /\/properties\/a/],
  },
  {
    name: 'the same schema on /v1/completions',
    path: '/v1/completions',
    fields: { response_format: schemaFormat({ type: 'object', properties: { a: { not: { type: 'string' } } } }) },
    param: 'response_format',
    message: [/\bnot\b/, /\/properties\/a/],
  },
  {
    name: 'an unsatisfiable schema (minimum 5, maximum 1)',
    fields: { response_format: schemaFormat({ type: 'integer', minimum: 5, maximum: 1 }) },
    param: 'response_format',
    message: [/minimum|maximum|unsatisfiable|empty|no value/i],
  },
  {
    name: 'a regex with an unclosed group',
    fields: { structured_outputs: { regex: '(ab' } },
    param: 'structured_outputs.regex',
    message: [/offset \d+|position \d+/i],
  },
  {
    name: 'guided_regex with an unclosed group',
    fields: { guided_regex: '(ab' },
    param: 'guided_regex',
    message: [/offset \d+|position \d+/i],
  },
  {
    name: 'GBNF that uses an undefined rule',
    fields: { structured_outputs: { grammar: 'root ::= "a" item\nitem ::= "b" missing\n' } },
    param: 'structured_outputs.grammar',
    message: [/missing/, /line 2\b/i, /column \d+/i],
  },
  {
    name: 'two constraints at once (response_format and guided_regex)',
    fields: { response_format: { type: 'json_object' }, guided_regex: '[a-z]+' },
    param: ['response_format', 'guided_regex'],
    message: [/response_format/, /guided_regex/],
  },
  {
    name: 'two constraints at once inside structured_outputs (regex and choice)',
    fields: { structured_outputs: { regex: '[a-z]+', choice: ['a', 'b'] } },
    param: ['structured_outputs.regex', 'structured_outputs.choice', 'structured_outputs'],
    message: [/regex/, /choice/],
  },
  {
    name: 'guided_choice with no choices',
    fields: { guided_choice: [] },
    param: 'guided_choice',
    message: [/guided_choice/],
  },
];

function bodyFor(path, fields) {
  return path === '/v1/completions'
    ? { model, prompt: 'Answer in the requested format.', ...fields }
    : chatBody(fields);
}

// A constrained request that must still succeed after the errors.
async function stillWorks() {
  const request = chatBody({ structured_outputs: { choice: ['up', 'down'] }, seed: 1, max_tokens: 8 });
  const response = await post('/v1/chat/completions', request);
  const [choice] = choicesOf(request, response);
  assert.ok(['up', 'down'].includes(choice.text), describe(request, response));
}

for (const c of cases) {
  test(`400 for ${c.name}`, async () => {
    const path = c.path ?? '/v1/chat/completions';
    const request = bodyFor(path, { ...c.fields, max_tokens: 16 });
    const response = await post(path, request);
    const shown = describe({ path, ...request }, response);
    assert.equal(response.status, 400, shown);
    const error = response.body.error;
    assert.ok(error && typeof error === 'object', shown);
    for (const key of ['message', 'type', 'param', 'code']) assert.ok(key in error, `no error.${key}: ${shown}`);
    assert.equal(error.type, 'invalid_request_error', shown);
    assert.equal(typeof error.message, 'string', shown);
    const params = [c.param].flat();
    assert.ok(typeof error.param === 'string' && params.some((p) => error.param.startsWith(p)),
      `error.param should name ${params.join(' or ')}: ${shown}`);
    for (const pattern of c.message) assert.match(error.message, pattern, shown);
    console.log(`${c.name}:\n  ${JSON.stringify(error)}`);
    await stillWorks();
  });
}

test('requests keep working after all the errors, also on /v1/completions', async () => {
  await stillWorks();
  const request = { model, prompt: 'x', guided_choice: ['left', 'right'], seed: 3, max_tokens: 8 };
  const response = await post('/v1/completions', request);
  const [choice] = choicesOf({ path: '/v1/completions', ...request }, response);
  assert.ok(['left', 'right'].includes(choice.text), describe(request, response));
});
