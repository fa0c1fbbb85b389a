// Hand-written recognizers for the languages of calculator.gbnf and tiny_language.gbnf, written
// from the languages' descriptions, not generated from the GBNF text, so that gbnf.test.mjs
// checks the server's grammar engine against an independent reading of the language.
//
// Both languages have spots a greedy one-pass parser gets wrong (the calculator's spaces before an
// operator that may not come, tiny_language's `//` that is either a comment or a division followed
// by a comment), so every parse function takes a start offset and returns the Set of every offset
// where that construct can end: backtracking over all alternatives, with the sets kept small by
// memoizing each (construct, offset).
//
// With {prefix: true} they decide instead whether the text is a prefix of some sentence of the
// language (what an output cut off by max_tokens must be): a construct that runs into the end of
// the text, even halfway through a keyword or a string, ends at OPEN, "anywhere after the text",
// and everything after OPEN matches. Every rule of both grammars derives some finite sentence, so
// a derivation that reaches the end of the text can always be completed.

const OPEN = Infinity;

// Applies `step` (offset -> Set of ends) to every offset of `starts`.
function then(starts, step) {
  const ends = new Set();
  for (const start of starts) for (const end of start === OPEN ? [OPEN] : step(start)) ends.add(end);
  return ends;
}

// Zero or more repetitions of `step`, starting at every offset of `starts`.
function many(starts, step) {
  const all = new Set(starts);
  let frontier = [...starts];
  while (frontier.length > 0) {
    const next = [];
    for (const start of frontier) {
      if (start === OPEN) continue;
      for (const end of step(start)) {
        if (!all.has(end)) {
          all.add(end);
          next.push(end);
        }
      }
    }
    frontier = next;
  }
  return all;
}

function memoized(fn) {
  const memo = new Map();
  return (i) => {
    if (i === OPEN) return new Set([OPEN]);
    let ends = memo.get(i);
    if (ends === undefined) {
      memo.set(i, new Set()); // a left-recursive re-entry (none here) would find nothing
      ends = fn(i);
      memo.set(i, ends);
    }
    return ends;
  };
}

const isDigit = (c) => c !== undefined && c >= '0' && c <= '9';
const isLetter = (c) => c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));

// Arithmetic: integers and decimals (digits, optionally "." and digits), + - * / with the usual
// precedence, unary minus written right before its operand, parentheses; spaces (only U+0020)
// may stand around binary operators and inside parentheses, nowhere else (not at either end).
export function isCalculatorExpression(text, { prefix = false } = {}) {
  const { literal, oneOf, atEnd, accepted } = terminals(text, prefix);
  const spaces = (i) => {
    const ends = new Set([i]);
    while (text[i] === ' ') ends.add(++i);
    return ends;
  };
  const digits = (i) => {
    const ends = new Set();
    if (atEnd(i)) ends.add(OPEN);
    while (isDigit(text[i])) ends.add(++i);
    return ends;
  };
  const number = memoized((i) => {
    const whole = digits(i);
    const ends = new Set(whole);
    for (const end of then(then(whole, literal('.')), digits)) ends.add(end);
    return ends;
  });
  // factor: a number, a minus and a factor, or a parenthesized expression.
  const factor = memoized((i) => {
    const ends = new Set(number(i));
    for (const end of then(literal('-')(i), factor)) ends.add(end);
    let inner = then(then(literal('(')(i), spaces), expression);
    for (const end of then(then(inner, spaces), literal(')'))) ends.add(end);
    return ends;
  });
  const operatorThen = (operators, operand) => (i) =>
    then(then(then(spaces(i), oneOf(operators)), spaces), operand);
  const term = memoized((i) => many(factor(i), operatorThen('*/', factor)));
  const expression = memoized((i) => many(term(i), operatorThen('+-', term)));
  return accepted(expression(0));
}

// The terminals both recognizers share: a literal string, one character of a set, and whether a
// parse ends the text (exactly, or in prefix mode also OPEN).
function terminals(text, prefix) {
  const atEnd = (i) => prefix && i === text.length;
  const literal = (s) => (i) => {
    if (text.startsWith(s, i)) return new Set([i + s.length]);
    if (prefix && text.length - i < s.length && s.startsWith(text.slice(i))) return new Set([OPEN]);
    return new Set();
  };
  const oneOf = (chars) => (i) => {
    if (i < text.length && chars.includes(text[i])) return new Set([i + 1]);
    return atEnd(i) ? new Set([OPEN]) : new Set();
  };
  const accepted = (ends) => ends.has(text.length) || (prefix && ends.has(OPEN));
  return { literal, oneOf, atEnd, accepted };
}

// tiny_language: a program is a sequence of statements with whitespace (space, tab, newline) and
// `//` comments (which run to and include a newline, so one at the very end needs its newline)
// around and between them. Statements:
//   NAME = EXPR;        print(EXPR);        if (COND) BLOCK [else BLOCK]        while (COND) BLOCK
// where BLOCK is { statements }, COND is EXPR followed by one of == != <= >= < > and an EXPR,
// and EXPR is arithmetic over integers, names ([A-Za-z_][A-Za-z0-9_]*), double-quoted strings
// (escapes \" \\ \n \t only, no raw newline), parentheses and unary minus, with + - and * / %.
// Whitespace and comments may stand between any two tokens except inside "print", "if",
// "while", "else" themselves, a unary minus and its operand, and a name or number. Keywords are
// not reserved: `print = 1;` assigns to a variable named print.
export function isTinyLanguageProgram(text, { prefix = false } = {}) {
  const { literal, oneOf: oneCharOf, atEnd, accepted } = terminals(text, prefix);
  const comment = (i) => {
    if (!text.startsWith('//', i)) return literal('//')(i);
    const newline = text.indexOf('\n', i + 2);
    if (newline < 0) return prefix ? new Set([OPEN]) : new Set();
    return new Set([newline + 1]);
  };
  const blank = alt2(oneCharOf(' \t\n'), comment);
  const ws = memoized((i) => many(new Set([i]), blank));
  const seq = (...steps) => (i) => steps.reduce((starts, step) => then(starts, step), new Set([i]));
  const alt = (...steps) => (i) => {
    const ends = new Set();
    for (const step of steps) for (const end of step(i)) ends.add(end);
    return ends;
  };
  const optional = (step) => alt(step, (i) => new Set([i]));

  const number = (i) => {
    const ends = new Set();
    if (atEnd(i)) ends.add(OPEN);
    while (isDigit(text[i])) ends.add(++i);
    return ends;
  };
  const identifier = (i) => {
    const ends = new Set();
    if (atEnd(i)) ends.add(OPEN);
    if (!(isLetter(text[i]) || text[i] === '_')) return ends;
    ends.add(++i);
    while (isLetter(text[i]) || isDigit(text[i]) || text[i] === '_') ends.add(++i);
    return ends;
  };
  const string = (i) => {
    if (text[i] !== '"') return atEnd(i) ? new Set([OPEN]) : new Set();
    for (let j = i + 1; j < text.length; ) {
      const c = text[j];
      if (c === '"') return new Set([j + 1]);
      if (c === '\n') return new Set();
      if (c === '\\') {
        if (j + 1 === text.length) break;
        if (!['"', '\\', 'n', 't'].includes(text[j + 1])) return new Set();
        j += 2;
      } else {
        j += c.codePointAt(0) > 0xffff ? 2 : 1;
      }
    }
    return prefix ? new Set([OPEN]) : new Set();
  };
  const oneOf = (...tokens) => alt(...tokens.map(literal));

  const factor = memoized((i) =>
    alt(number, identifier, string, seq(literal('('), ws, expression, ws, literal(')')),
      seq(literal('-'), factor))(i));
  const term = memoized((i) => many(factor(i), seq(ws, oneOf('*', '/', '%'), ws, factor)));
  const expression = memoized((i) => many(term(i), seq(ws, oneOf('+', '-'), ws, term)));
  const condition = seq(expression, ws, oneOf('==', '!=', '<=', '>=', '<', '>'), ws, expression);

  const statements = (i) => many(new Set([i]), seq(statement, ws));
  const block = memoized(seq(literal('{'), ws, statements, literal('}')));
  const assignment = seq(identifier, ws, literal('='), ws, expression, ws, literal(';'));
  const print = seq(literal('print'), ws, literal('('), ws, expression, ws, literal(')'), ws, literal(';'));
  const ifStatement = seq(literal('if'), ws, literal('('), ws, condition, ws, literal(')'), ws, block,
    optional(seq(ws, literal('else'), ws, block)));
  const whileStatement = seq(literal('while'), ws, literal('('), ws, condition, ws, literal(')'), ws, block);
  const statement = memoized(alt(assignment, print, ifStatement, whileStatement));

  return accepted(then(ws(0), statements));
}

function alt2(a, b) {
  return (i) => new Set([...a(i), ...b(i)]);
}
