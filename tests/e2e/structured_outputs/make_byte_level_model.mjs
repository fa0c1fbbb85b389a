// Writes the model this suite serves: ../shared's random-qwen3-tiny weights (a 2048-row embedding)
// with a 2048-token byte-level BPE vocabulary cut from Qwen3's tokenizer, so that every byte, and
// so every JSON, regex or GBNF character, is a token.
//   node make_byte_level_model.mjs RANDOM_QWEN3_TINY_DIR QWEN3_TOKENIZER_DIR OUT_DIR
//
// Why: random-qwen3-tiny ships the TinyStories tokenizer, a SentencePiece-style BPE without byte
// fallback tokens whose 2048 tokens spell no { } [ ] ( ) @ = + * / \ % characters, so JSON objects
// and arrays, and most regexes and GBNF languages, cannot be written in its tokens at all.
//
// The cut: Qwen3's BPE ranks its merges in id order (merge r makes token 256 + r, the 256 byte
// tokens come first), so ids 0..2044 with the merges whose result stays below 2045 are a complete
// byte-level BPE of their own. Ids 2045..2047 become <|endoftext|>, <|im_start|>, <|im_end|> (the
// end of a turn). No chat template: tern's ChatML fallback uses exactly these tokens.
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const [modelDir, tokenizerDir, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: node make_byte_level_model.mjs RANDOM_QWEN3_TINY_DIR QWEN3_TOKENIZER_DIR OUT_DIR');
  process.exit(2);
}

const config = JSON.parse(readFileSync(join(modelDir, 'config.json'), 'utf8'));
const vocabSize = config.vocab_size;
const specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
const regular = vocabSize - specials.length;

const tokenizer = JSON.parse(readFileSync(join(tokenizerDir, 'tokenizer.json'), 'utf8'));
const model = tokenizer.model;
if (model.type !== 'BPE' || tokenizer.decoder?.type !== 'ByteLevel') throw new Error('expected a byte-level BPE tokenizer');

const vocab = {};
for (const [token, id] of Object.entries(model.vocab)) if (id < regular) vocab[token] = id;
const merges = [];
for (const merge of model.merges) {
  const [a, b] = Array.isArray(merge) ? merge : merge.split(' ');
  const id = model.vocab[a + b];
  if (id === undefined || id >= regular) continue;
  if (!(a in vocab) || !(b in vocab)) throw new Error(`merge ${a} ${b} uses a token cut away`);
  merges.push(merge);
}
if (Object.keys(vocab).length !== regular) throw new Error(`ids below ${regular} are not contiguous`);
const byteTokens = Object.keys(vocab).filter((t) => [...t].length === 1).length;
if (byteTokens < 256) throw new Error(`only ${byteTokens} single-byte tokens`);

const added = specials.map((content, i) => ({
  id: regular + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
}));
const cut = { ...tokenizer, added_tokens: added, model: { ...model, vocab, merges } };

mkdirSync(outDir, { recursive: true });
symlinkSync(resolve(modelDir, 'model.safetensors'), join(outDir, 'model.safetensors'));
writeFileSync(join(outDir, 'config.json'), JSON.stringify({
  ...config, bos_token_id: regular, eos_token_id: regular + 2,
}, null, 2));
writeFileSync(join(outDir, 'tokenizer.json'), JSON.stringify(cut));
writeFileSync(join(outDir, 'tokenizer_config.json'), JSON.stringify({
  add_bos_token: false,
  add_prefix_space: false,
  added_tokens_decoder: Object.fromEntries(added.map(({ id, ...rest }) => [String(id), rest])),
  bos_token: null,
  eos_token: '<|im_end|>',
  pad_token: '<|endoftext|>',
  unk_token: null,
  errors: 'replace',
  model_max_length: config.max_position_embeddings,
  split_special_tokens: false,
  tokenizer_class: 'Qwen2Tokenizer',
}, null, 2));
console.log(`${outDir}: ${modelDir} weights, ${regular} byte-level BPE tokens (${merges.length} merges) + ${specials.join(' ')}`);
