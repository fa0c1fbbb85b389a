// structured_outputs.grammar (llama.cpp GBNF): calculator.gbnf and tiny_language.gbnf, 50 seeded
// samples each at temperature 1.0 and max_tokens 256. Every output that ends with "stop" must be a
// sentence of the language, and every output cut off by max_tokens ("length") a prefix of one, as
// decided by the hand-written recognizers of languages.mjs (not generated from the GBNF).
//
// Both grammars bound their repetitions (numbers, names, whitespace runs, statements), so a random
// model reaches an end: about 60% of calculator and 50% of tiny-language samples stop within
// 256 tokens; the rest are checked as prefixes. A second run adds logit_bias +15 to the
// end-of-turn token: the model then stops at almost the first place the grammar allows, which
// checks that the grammar masks the end-of-turn token everywhere else.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { model, percent, post, readHere, sample, share, table } from './common.mjs';
import { isCalculatorExpression, isTinyLanguageProgram } from './languages.mjs';

const SAMPLES = 50;

const languages = [
  {
    file: 'calculator.gbnf',
    accepts: isCalculatorExpression,
    valid: ['0', '12.5', '1+2', '1 + 2 * 3', '-(1.5 - -2) / 3', '( 1 )', '((2))*-3', '1  -2',
      '7 /  8.25*(9)'],
    invalid: ['', ' 1', '1 ', '1.', '.5', '1 2', '1+', '(1', '1)', '- 1', '1++2', '1e5', '( 1 ) )',
      '1\t+ 2', 'a'],
    prefixes: ['', '1', '1 +', '(1', '(', '-', '1.', '1 ', '((  -', '1 * (2 +  '],
    nonPrefixes: ['1 2', ')', '1..', '+1', '1 + *', ' 1', '1)', 'a', '1 + )'],
  },
  {
    file: 'tiny_language.gbnf',
    accepts: isTinyLanguageProgram,
    valid: ['', '  \n', 'x=1;', 'print(x);', 'print = 1;', 'printx=2 ;', 'if(a<b){}',
      'if (a <= 1) { x = 2; } else { y = "a\\"b"; }', 'while(i!=10){i=i+1;}\n', 'x = a///c\n b;',
      'x = a // c\n / b;', '// only a comment\n', 'x = -(1 + 2) % "s\\t" * y_1;',
      'if(1==1){if(2>1){}}else{}', 'x=1;y=2;', 'else = 3;', 'if(a>b){}\nelse{}'],
    invalid: ['x=1', 'x = 1; // no newline', 'print(x)', 'print x;', 'if(a){}', 'if(a<b)x=1;',
      'x = "a\nb";', 'x = "\\q";', '1x = 2;', 'while(a<b){', 'x = - ;', 'x=1;}', 'else{}',
      'if(a<b){} else', 'x = a b;', 'x = (1;'],
    prefixes: ['', 'x = ', 'print(', 'if (a <', '// comment no newline', 'x = "abc', 'whi', 'x = "a\\',
      'x = a /', 'x=1; y', 'if(a<b){}el', 'if(a<b){} else {', 'pr', 'x = 1 +  ', '  \n  /'],
    nonPrefixes: ['x=1;}', '1x', 'x ==', '}', 'x = "a\nb"', 'x = "\\q', 'print x', 'if a', 'x = 1 1',
      '=', 'x = ;'],
  },
];

for (const language of languages) {
  test(`the recognizer of ${language.file}'s language agrees with hand-picked examples`, () => {
    const shown = (text) => JSON.stringify(text);
    for (const text of language.valid) assert.ok(language.accepts(text), `should accept ${shown(text)}`);
    for (const text of language.invalid) assert.ok(!language.accepts(text), `should reject ${shown(text)}`);
    for (const text of [...language.valid, ...language.prefixes]) {
      assert.ok(language.accepts(text, { prefix: true }), `should accept the prefix ${shown(text)}`);
    }
    for (const text of language.nonPrefixes) {
      assert.ok(!language.accepts(text, { prefix: true }), `should reject the prefix ${shown(text)}`);
    }
  });
}

// The id of the end-of-turn token, for logit_bias.
let endOfTurn;
before(async () => {
  const response = await post('/tokenize', { model, prompt: '<|im_end|>', add_special_tokens: false });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  assert.equal(response.body.tokens.length, 1, JSON.stringify(response.body));
  [endOfTurn] = response.body.tokens;
});

const rows = [];

function check(language, results, label) {
  const invalid = [];
  const badPrefixes = [];
  let stop = 0;
  let length = 0;
  for (const r of results) {
    if (r.finish_reason === 'length') {
      length++;
      if (!language.accepts(r.text, { prefix: true })) badPrefixes.push(r);
    } else {
      assert.equal(r.finish_reason, 'stop', JSON.stringify(r));
      stop++;
      if (!language.accepts(r.text)) invalid.push(r);
    }
  }
  rows.push([`${language.file}${label}`, stop, length, percent(share(length, results.length)), invalid.length,
    badPrefixes.length]);
  console.log(`\n${table(['grammar', 'stop', 'length', 'length share', 'invalid stop', 'invalid prefix'], [rows.at(-1)])}`);
  const squeeze = (text) => JSON.stringify(text.replace(/ {4,}/g, (m) => `<${m.length} spaces>`)).slice(0, 160);
  for (const r of [...results.filter((x) => x.finish_reason === 'stop').slice(0, 2), ...results.slice(0, 2)]) {
    console.log(`  seed ${r.seed} ${r.finish_reason}: ${squeeze(r.text)}`);
  }
  assert.deepEqual(invalid.map((r) => `seed ${r.seed}: ${JSON.stringify(r.text)}`), [],
    `"stop" outputs outside ${language.file}'s language`);
  assert.deepEqual(badPrefixes.map((r) => `seed ${r.seed}: ${JSON.stringify(r.text)}`), [],
    `"length" outputs that no sentence of ${language.file}'s language starts with`);
}

for (const language of languages) {
  test(`structured_outputs.grammar with ${language.file}: "stop" outputs are sentences, "length" ones prefixes`, async () => {
    const grammar = readHere(language.file);
    check(language, await sample({ structured_outputs: { grammar } }, { samples: SAMPLES }), '');
  });
}

for (const language of languages) {
  test(`${language.file} with logit_bias +15 on the end-of-turn token: it ends only where the grammar allows`, async () => {
    const grammar = readHere(language.file);
    const results = await sample({ structured_outputs: { grammar }, logit_bias: { [endOfTurn]: 15 } },
      { samples: SAMPLES });
    check(language, results, ' (end biased)');
    assert.ok(results.some((r) => r.finish_reason === 'stop'), 'no sample ended with "stop"');
  });
}

test('summary', () => {
  console.log(`\nstructured_outputs.grammar, ${SAMPLES} samples each at temperature 1.0, max_tokens 256 ` +
    '("invalid prefix": a "length" output no sentence of the language starts with):\n' +
    table(['grammar', 'stop', 'length', 'length share', 'invalid stop', 'invalid prefix'], rows));
});
