// Shared helpers of the structured-outputs suite. run.sh starts `tern serve` over
// ../shared/models/random-qwen3-tiny (random weights: noise unless constrained) and sets:
//   TERN_URL       the server, e.g. http://127.0.0.1:8000 (required)
//   TERN_API_KEY   the key the server expects
//   TERN_MODEL     the served model's name (default random-qwen3-tiny)
//   TERN_SO_CONCURRENCY  requests in flight at once (default 32)
// Run by hand: TERN_URL=http://127.0.0.1:8000 node --test
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

export const url = process.env.TERN_URL ?? '';
export const apiKey = process.env.TERN_API_KEY ?? '';
export const model = process.env.TERN_MODEL || 'random-qwen3-tiny';
export const concurrency = Number(process.env.TERN_SO_CONCURRENCY || 32);

assert.ok(url, 'set TERN_URL to the server, e.g. http://127.0.0.1:8000');

export const readHere = (name) => readFileSync(new URL(name, import.meta.url), 'utf8');

// POSTs a JSON body; returns {status, body} with the body parsed (or {raw} when it is not JSON).
export async function post(path, body) {
  const headers = { 'content-type': 'application/json' };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  const response = await fetch(url + path, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(300_000),
  });
  const text = await response.text();
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = { raw: text };
  }
  return { status: response.status, body: parsed };
}

// One chat request; the prompt does not matter to a random-weight model, so every request
// shares it.
export function chatBody(fields) {
  return {
    model,
    messages: [{ role: 'user', content: 'Answer in the requested format.' }],
    ...fields,
  };
}

// The choices of a successful chat or completion response: [{text, finish_reason}]. A non-200
// answer fails with the request and the response in the message, so a failure shows both.
export function choicesOf(request, response) {
  assert.equal(response.status, 200, describe(request, response));
  return response.body.choices.map((c) => ({
    text: c.message ? c.message.content ?? '' : c.text,
    finish_reason: c.finish_reason,
  }));
}

export function describe(request, response) {
  const shown = JSON.stringify(request);
  return `request ${request.path ?? ''} ${shown.length > 2000 ? shown.slice(0, 2000) + '...' : shown}` +
    `\nresponse ${response.status} ${JSON.stringify(response.body).slice(0, 2000)}`;
}

// Runs fn over items with at most `limit` calls in flight; results keep the items' order.
export async function mapPool(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index], index);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

// `samples` chat completions through `path` with the given constraint fields: one request per
// seed (seed = sample index, so every sample is reproducible alone), `limit` in flight.
// Returns [{seed, text, finish_reason}] and fails on the first non-200 answer.
export async function sample(fields, { samples, path = '/v1/chat/completions', temperature = 1.0,
  maxTokens = 256, limit = concurrency, body: makeBody = chatBody } = {}) {
  const results = await mapPool(Array.from({ length: samples }, (_, i) => i), limit, async (seed) => {
    const request = makeBody({ ...fields, seed, temperature, max_tokens: maxTokens });
    const response = await post(path, request);
    const [choice] = choicesOf({ path, ...request }, response);
    return { seed, ...choice };
  });
  return results;
}

export function share(count, total) {
  return total === 0 ? 0 : count / total;
}

export function percent(value) {
  return `${(100 * value).toFixed(1)}%`;
}

// A plain-text table with right-aligned numeric columns, for stdout (and for the docs).
export function table(headers, rows) {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, c) => Math.max(...cells.map((r) => r[c].length)));
  const line = (r) => '| ' + r.map((v, c) => (c === 0 ? v.padEnd(widths[c]) : v.padStart(widths[c])))
    .join(' | ') + ' |';
  const rule = '|' + widths.map((w, c) => (c === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':'))
    .join('|') + '|';
  return [line(headers), rule, ...rows.map((r) => line(r.map(String)))].join('\n');
}
