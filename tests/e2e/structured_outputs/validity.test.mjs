// JSON Schema validity: for each schema of schemas.json ([{name, schema}]), SAMPLES seeded samples
// at temperature 1.0 and max_tokens 256 through /v1/chat/completions with
// response_format {type: json_schema}. Every output that ends with "stop" must parse and validate
// (Ajv's JSON Schema 2020-12 validator with ajv-formats); at most 5% of a schema's samples may run
// out of tokens ("length"). Prints the table of the results. Then a few samples through every other
// spelling of the constraint, and response_format {type: json_object}.
//   TERN_SO_SAMPLES  samples per schema (default 200)
//   TERN_SO_N        samples per request, `n` (default 1: one request per sample, seed = index)
//   TERN_SO_SCHEMAS  another schema file (default schemas.json here)
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

import { readFileSync } from 'node:fs';

import { isJsonPrefix } from './json_prefix.mjs';
import { chatBody, concurrency, describe, mapPool, model, percent, post, readHere, share, table }
  from './common.mjs';

const SAMPLES = Number(process.env.TERN_SO_SAMPLES || 200);
const N = Number(process.env.TERN_SO_N || 1);
const MAX_LENGTH_SHARE = 0.05;

const schemas = JSON.parse(process.env.TERN_SO_SCHEMAS
  ? readFileSync(process.env.TERN_SO_SCHEMAS, 'utf8') : readHere('schemas.json'));

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
// A format JSON Schema does not define (e.g. "hex-color") is only an annotation (2020-12
// validation vocabulary, section 7.2.3): any string passes, on the server as here.
const unknownFormats = new Set();
(function collectFormats(node) {
  if (Array.isArray(node)) node.forEach(collectFormats);
  else if (node && typeof node === 'object') {
    if (typeof node.format === 'string' && !ajv.formats[node.format]) unknownFormats.add(node.format);
    Object.values(node).forEach(collectFormats);
  }
})(schemas.map((e) => e.schema));
for (const format of unknownFormats) ajv.addFormat(format, true);

const validators = new Map(); // name -> Ajv validate function
function validatorOf(entry) {
  if (!validators.has(entry.name)) validators.set(entry.name, ajv.compile(entry.schema));
  return validators.get(entry.name);
}

const responseFormat = (name, schema) => ({ type: 'json_schema', json_schema: { name, schema, strict: true } });

// The requests of one schema: SAMPLES / N requests with seeds 0, 1, ...; with N > 1 a request's
// other samples take seeds the server derives from its seed.
function requestsOf(entry) {
  const count = Math.ceil(SAMPLES / N);
  return Array.from({ length: count }, (_, seed) => chatBody({
    response_format: responseFormat(entry.name, entry.schema),
    seed,
    n: Math.min(N, SAMPLES - seed * N),
    temperature: 1.0,
    max_tokens: 256,
  }));
}

// Whitespace outside strings: the server writes compact JSON.
function hasLooseWhitespace(text) {
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      return true;
    }
  }
  return false;
}

// Where a value's declared properties come out of the schema's order: the server writes them in
// the order of `properties`. Follows `properties`, `items` and `prefixItems` only (no $ref or
// combinators) and skips objects with integer-like keys, which JavaScript objects reorder.
function outOfOrder(value, schema, pointer = '') {
  if (!schema || typeof schema !== 'object' || value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = Array.isArray(schema.prefixItems) && i < schema.prefixItems.length ? schema.prefixItems[i] : schema.items;
      const found = outOfOrder(value[i], item, `${pointer}/${i}`);
      if (found) return found;
    }
    return null;
  }
  if (!schema.properties || typeof schema.properties !== 'object') return null;
  const declared = Object.keys(schema.properties);
  const keys = Object.keys(value);
  if (keys.some((k) => /^(0|[1-9]\d*)$/.test(k))) return null;
  const positions = keys.filter((k) => declared.includes(k)).map((k) => declared.indexOf(k));
  for (let i = 1; i < positions.length; i++) {
    if (positions[i] < positions[i - 1]) return `${pointer || '/'}: keys ${JSON.stringify(keys)}, schema order ${JSON.stringify(declared)}`;
  }
  for (const k of keys) {
    const found = outOfOrder(value[k], schema.properties[k], `${pointer}/${k}`);
    if (found) return found;
  }
  return null;
}

const results = new Map(); // name -> {stop, length, other, errors, invalid, loose, samples, examples}
let elapsed = 0;

before(async () => {
  const work = [];
  for (const entry of schemas) {
    results.set(entry.name, {
      stop: 0, length: 0, other: [], errors: [], invalid: [], badPrefixes: [], loose: [], examples: [],
    });
    for (const request of requestsOf(entry)) work.push({ entry, request });
  }
  for (const entry of schemas) validatorOf(entry);
  const started = Date.now();
  await mapPool(work, concurrency, async ({ entry, request }) => {
    const r = results.get(entry.name);
    const response = await post('/v1/chat/completions', request);
    if (response.status !== 200) {
      r.errors.push(describe({ path: '/v1/chat/completions', ...request }, response));
      return;
    }
    for (const choice of response.body.choices) {
      const text = choice.message?.content ?? '';
      const sampleId = `seed ${request.seed} choice ${choice.index}`;
      if (choice.finish_reason === 'length') {
        r.length++;
        if (!isJsonPrefix(text)) r.badPrefixes.push(`${sampleId}: ${JSON.stringify(text)}`);
        continue;
      }
      if (choice.finish_reason !== 'stop') {
        r.other.push(`${sampleId}: finish_reason ${choice.finish_reason}: ${JSON.stringify(text)}`);
        continue;
      }
      r.stop++;
      let value;
      try {
        value = JSON.parse(text);
      } catch (error) {
        r.invalid.push(`${sampleId}: does not parse (${error.message}): ${JSON.stringify(text)}`);
        continue;
      }
      const validate = validatorOf(entry);
      if (!validate(value)) {
        r.invalid.push(`${sampleId}: ${ajv.errorsText(validate.errors)}: ${text}`);
        continue;
      }
      if (r.examples.length < 2) r.examples.push(text);
      const order = outOfOrder(value, entry.schema);
      if (hasLooseWhitespace(text) || order) r.loose.push(`${sampleId}: ${order ?? 'whitespace outside strings'}: ${text}`);
    }
  });
  elapsed = (Date.now() - started) / 1000;
});

for (const entry of schemas) {
  test(`${entry.name}: every "stop" output validates, "length" at most ${percent(MAX_LENGTH_SHARE)}`, () => {
    const r = results.get(entry.name);
    assert.deepEqual(r.errors.slice(0, 1), [], `${r.errors.length} requests failed, the first:`);
    assert.deepEqual(r.other.slice(0, 5), [], 'finish reasons other than stop and length');
    assert.deepEqual(r.invalid.slice(0, 5), [], `${r.invalid.length} of ${r.stop} "stop" outputs are invalid`);
    assert.deepEqual(r.badPrefixes.slice(0, 5), [],
      `${r.badPrefixes.length} of ${r.length} "length" outputs are not even the start of a JSON text`);
    const total = r.stop + r.length;
    assert.equal(total, SAMPLES);
    assert.ok(share(r.length, total) <= MAX_LENGTH_SHARE,
      `${r.length} of ${total} samples (${percent(share(r.length, total))}) ran out of tokens`);
  });
}

test('outputs are compact JSON with properties in the schema\'s order', () => {
  const loose = [...results].flatMap(([name, r]) => r.loose.map((l) => `${name} ${l}`));
  assert.deepEqual(loose.slice(0, 5), [], `${loose.length} outputs are not compact or reorder properties`);
});

test('results table', () => {
  const rows = schemas.map(({ name }) => {
    const r = results.get(name);
    const total = r.stop + r.length + r.other.length;
    return [name, r.stop, r.length, percent(share(r.length, total)), r.invalid.length + r.other.length,
      r.badPrefixes.length, r.errors.length];
  });
  const all = [...results.values()];
  const sum = (f) => all.reduce((s, r) => s + f(r), 0);
  const stops = sum((r) => r.stop);
  const lengths = sum((r) => r.length);
  rows.push(['all', stops, lengths, percent(share(lengths, stops + lengths)),
    sum((r) => r.invalid.length + r.other.length), sum((r) => r.badPrefixes.length), sum((r) => r.errors.length)]);
  console.log(`\nresponse_format json_schema on ${model}: ${SAMPLES} samples per schema, temperature 1.0, ` +
    `max_tokens 256, ${N === 1 ? 'one request per sample (seed = sample index)' : `n = ${N} per request`}, ` +
    `${concurrency} requests in flight; ${elapsed.toFixed(1)} s for all ${schemas.length} schemas\n` +
    table(['schema', 'stop', 'length', 'length share', 'invalid', 'non-JSON length', 'failed requests'], rows) +
    '\n("invalid": "stop" outputs that do not parse or validate; "non-JSON length": "length" outputs ' +
    'that no JSON text starts with; "failed requests": non-200 answers)');
  if (unknownFormats.size) console.log(`formats checked as annotations only: ${[...unknownFormats].join(', ')}`);
  console.log('one output of each schema:');
  for (const { name } of schemas) {
    const r = results.get(name);
    if (r.examples.length) console.log(`  ${name}: ${r.examples[0]}`);
  }
});

// The same constraint in every other spelling the server reads, on both endpoints.
const spellings = [
  ['guided_json', '/v1/chat/completions', (e) => chatBody({ guided_json: e.schema })],
  ['structured_outputs.json', '/v1/chat/completions', (e) => chatBody({ structured_outputs: { json: e.schema } })],
  ['json_schema (llama.cpp)', '/v1/chat/completions', (e) => chatBody({ json_schema: e.schema })],
  ['response_format on /v1/completions', '/v1/completions',
    (e) => ({ model, prompt: 'Answer in JSON.', response_format: responseFormat(e.name, e.schema) })],
  ['structured_outputs.json on /v1/completions', '/v1/completions',
    (e) => ({ model, prompt: 'Answer in JSON.', structured_outputs: { json: e.schema } })],
];

for (const [label, path, makeBody] of spellings) {
  test(`${label}: "stop" outputs validate`, async () => {
    const picked = schemas.slice(0, 3);
    const requests = picked.flatMap((entry) => Array.from({ length: 4 }, (_, seed) => ({ entry, seed })));
    let stops = 0;
    await mapPool(requests, concurrency, async ({ entry, seed }) => {
      const request = { ...makeBody(entry), seed, temperature: 1.0, max_tokens: 256 };
      const response = await post(path, request);
      const shown = describe({ path, ...request }, response);
      assert.equal(response.status, 200, shown);
      const choice = response.body.choices[0];
      if (choice.finish_reason === 'length') return;
      assert.equal(choice.finish_reason, 'stop', shown);
      const text = choice.message ? choice.message.content : choice.text;
      const validate = validatorOf(entry);
      let value;
      assert.doesNotThrow(() => (value = JSON.parse(text)), shown);
      assert.ok(validate(value), `${ajv.errorsText(validate.errors)}\n${shown}`);
      stops++;
    });
    assert.ok(stops > 0, 'no sample ended with "stop"');
  });
}

test('response_format json_object: "stop" outputs are JSON objects, "length" ones starts of one', async () => {
  const SAMPLES_JSON_OBJECT = 32;
  let stops = 0;
  let lengths = 0;
  const examples = [];
  const bad = [];
  await mapPool(Array.from({ length: SAMPLES_JSON_OBJECT }, (_, i) => i), concurrency, async (seed) => {
    const request = chatBody({ response_format: { type: 'json_object' }, seed, temperature: 1.0, max_tokens: 256 });
    const response = await post('/v1/chat/completions', request);
    const shown = describe(request, response);
    assert.equal(response.status, 200, shown);
    const choice = response.body.choices[0];
    const text = choice.message.content;
    if (examples.length < 2) examples.push(`${choice.finish_reason}: ${JSON.stringify(text.slice(0, 100))}`);
    if (choice.finish_reason === 'length') {
      lengths++;
      if (!isJsonPrefix(text, { object: true })) bad.push(shown);
      return;
    }
    assert.equal(choice.finish_reason, 'stop', shown);
    stops++;
    let value;
    try {
      value = JSON.parse(text);
    } catch {
      bad.push(shown);
      return;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) bad.push(shown);
  });
  console.log(`json_object, ${SAMPLES_JSON_OBJECT} samples: ${stops} stop, ${lengths} length ` +
    `(${percent(share(lengths, SAMPLES_JSON_OBJECT))}), ${bad.length} invalid; e.g.\n  ${examples.join('\n  ')}`);
  assert.deepEqual(bad.slice(0, 3), [], `${bad.length} outputs are not JSON objects (or starts of one)`);
});
