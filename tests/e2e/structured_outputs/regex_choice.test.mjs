// structured_outputs.regex and the choice constraints (structured_outputs.choice, guided_choice):
// 50 seeded samples each at temperature 1.0. Every regex output that ends with "stop" must match
// its pattern in full (checked with JavaScript's own RegExp in Unicode mode); every choice output
// is one of the choices, and the samples use more than one of them.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { percent, sample, share, table } from './common.mjs';

const SAMPLES = 50;

const patterns = [
  { name: 'email', pattern: '[a-z]{3,8}@[a-z]{2,5}\\.(com|org)' },
  { name: 'phone', pattern: '\\(\\d{3}\\) \\d{3}-\\d{4}' },
  { name: 'yes/no/maybe', pattern: '(yes|no|maybe)' },
  { name: 'ISO date', pattern: '\\d{4}-\\d{2}-\\d{2}' },
  { name: 'names', pattern: '[A-Z][a-z]{1,9}( [A-Z][a-z]{1,9}){0,2}' },
  { name: 'decimal', pattern: '-?(0|[1-9][0-9]{0,5})(\\.[0-9]{1,3})?' },
];

const rows = [];

for (const { name, pattern } of patterns) {
  test(`structured_outputs.regex ${name} /${pattern}/: every "stop" output matches in full`, async () => {
    const whole = new RegExp('^(?:' + pattern + ')$', 'u');
    const results = await sample({ structured_outputs: { regex: pattern } }, { samples: SAMPLES });
    const stops = results.filter((r) => r.finish_reason === 'stop');
    const lengths = results.filter((r) => r.finish_reason === 'length');
    assert.equal(stops.length + lengths.length, results.length,
      `unexpected finish reasons: ${JSON.stringify(results.filter((r) => !['stop', 'length'].includes(r.finish_reason)))}`);
    const mismatches = stops.filter((r) => !whole.test(r.text));
    rows.push([`regex ${name}`, stops.length, lengths.length, percent(share(lengths.length, results.length)),
      mismatches.length, new Set(stops.map((r) => r.text)).size]);
    console.log(`\n${table(['constraint', 'stop', 'length', 'length share', 'invalid', 'distinct'], [rows.at(-1)])}` +
      `\nexamples: ${stops.slice(0, 4).map((r) => JSON.stringify(r.text)).join(', ')}`);
    assert.deepEqual(mismatches, [], `outputs that do not match /^(?:${pattern})$/u`);
    assert.ok(stops.length > 0, 'no sample ended with "stop"');
  });
}

// Eight choices: the random model strongly prefers some first tokens, and with fewer choices the
// 50 seeds can all land on one.
const choices = ['red', 'green', 'blue', 'yellow', 'purple', 'orange', 'black', 'white'];

for (const [label, fields] of [
  ['structured_outputs.choice', { structured_outputs: { choice: choices } }],
  ['guided_choice', { guided_choice: choices }],
]) {
  test(`${label}: every output is one of the choices, and more than one appears`, async () => {
    const results = await sample(fields, { samples: SAMPLES });
    const outside = results.filter((r) => r.finish_reason !== 'stop' || !choices.includes(r.text));
    const seen = new Map();
    for (const r of results) seen.set(r.text, (seen.get(r.text) ?? 0) + 1);
    rows.push([label, results.length - outside.length, results.filter((r) => r.finish_reason === 'length').length,
      percent(share(results.filter((r) => r.finish_reason === 'length').length, results.length)), outside.length,
      seen.size]);
    console.log(`\n${table(['constraint', 'stop', 'length', 'length share', 'invalid', 'distinct'], [rows.at(-1)])}` +
      `\ncounts: ${JSON.stringify(Object.fromEntries(seen))}`);
    assert.deepEqual(outside, [], 'outputs that are not one of the choices (or did not end with "stop")');
    assert.ok(seen.size > 1, `all ${SAMPLES} samples chose ${JSON.stringify([...seen.keys()])}`);
  });
}

test('summary', () => {
  console.log(`\nregex and choice constraints, ${SAMPLES} samples each at temperature 1.0, max_tokens 256:\n` +
    table(['constraint', 'stop', 'length', 'length share', 'invalid', 'distinct'], rows));
});
