// Whether a text is a prefix of some JSON text (RFC 8259): what an output cut off by max_tokens
// under a JSON constraint must be. A character-level pushdown recognizer, independent of the
// server's grammar code. With {object: true} the JSON text must be an object.
const WS = ' \t\n\r';
const HEX = /^[0-9a-fA-F]$/;

export function isJsonPrefix(text, { object = false } = {}) {
  const stack = []; // '{' or '['
  // expect: 'value' | 'firstValue' (after '[') | 'firstKey' (after '{') | 'key' | 'colon' |
  // 'after' (after a value) | 'string' | 'number' | 'literal' | 'end'
  let expect = 'value';
  let isKey = false;
  let escape = 0; // 0: none, 1: after '\', 2..5: \u digits seen minus one
  let number = ''; // the number's state: see stepNumber
  let literal = '';
  let literalAt = 0;
  let started = false;

  const afterValue = () => {
    expect = stack.length === 0 ? 'end' : 'after';
  };
  const startValue = (c) => {
    if (!started && object && c !== '{') return false;
    started = true;
    if (c === '{') {
      stack.push('{');
      expect = 'firstKey';
    } else if (c === '[') {
      stack.push('[');
      expect = 'firstValue';
    } else if (c === '"') {
      expect = 'string';
      isKey = false;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      expect = 'number';
      number = c === '-' ? 'sign' : c === '0' ? 'zero' : 'int';
    } else if (c === 't' || c === 'f' || c === 'n') {
      expect = 'literal';
      literal = c === 't' ? 'true' : c === 'f' ? 'false' : 'null';
      literalAt = 1;
    } else {
      return false;
    }
    return true;
  };
  // One character of a number; false when the number cannot take it (then the number must be
  // complete and the character goes to what follows).
  const stepNumber = (c) => {
    const digit = c >= '0' && c <= '9';
    const next = {
      sign: digit ? (c === '0' ? 'zero' : 'int') : null,
      zero: c === '.' ? 'dot' : c === 'e' || c === 'E' ? 'exp' : null,
      int: digit ? 'int' : c === '.' ? 'dot' : c === 'e' || c === 'E' ? 'exp' : null,
      dot: digit ? 'frac' : null,
      frac: digit ? 'frac' : c === 'e' || c === 'E' ? 'exp' : null,
      exp: digit ? 'expDigits' : c === '+' || c === '-' ? 'expSign' : null,
      expSign: digit ? 'expDigits' : null,
      expDigits: digit ? 'expDigits' : null,
    }[number];
    if (next) number = next;
    return Boolean(next);
  };

  for (const c of text) {
    if (expect === 'string') {
      if (escape === 1) {
        if (c === 'u') escape = 2;
        else if ('"\\/bfnrt'.includes(c)) escape = 0;
        else return false;
      } else if (escape >= 2) {
        if (!HEX.test(c)) return false;
        escape = escape === 5 ? 0 : escape + 1;
      } else if (c === '\\') {
        escape = 1;
      } else if (c === '"') {
        if (isKey) expect = 'colon';
        else afterValue();
      } else if (c.codePointAt(0) < 0x20) {
        return false;
      }
      continue;
    }
    if (expect === 'literal') {
      if (c !== literal[literalAt]) return false;
      if (++literalAt === literal.length) afterValue();
      continue;
    }
    if (expect === 'number') {
      if (stepNumber(c)) continue;
      if (!['zero', 'int', 'frac', 'expDigits'].includes(number)) return false;
      afterValue();
    }
    if (WS.includes(c)) continue;
    switch (expect) {
      case 'value':
        if (!startValue(c)) return false;
        break;
      case 'firstValue':
        if (c === ']') {
          stack.pop();
          afterValue();
        } else if (!startValue(c)) {
          return false;
        }
        break;
      case 'firstKey':
      case 'key':
        if (c === '}' && expect === 'firstKey') {
          stack.pop();
          afterValue();
        } else if (c === '"') {
          expect = 'string';
          isKey = true;
        } else {
          return false;
        }
        break;
      case 'colon':
        if (c !== ':') return false;
        expect = 'value';
        break;
      case 'after': {
        const top = stack.at(-1);
        if (c === ',') {
          expect = top === '{' ? 'key' : 'value';
        } else if ((c === '}' && top === '{') || (c === ']' && top === '[')) {
          stack.pop();
          afterValue();
        } else {
          return false;
        }
        break;
      }
      case 'end':
        return false;
      default:
        return false;
    }
  }
  return true;
}
