// Drives a running `deepinfer serve` with the official `openai` npm client (v4):
// completions, chat, streaming and seeded sampling. Exits non-zero on the first
// failed check.
//
//   node openai_client.mjs NPM_PREFIX BASE_URL API_KEY MODEL
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const [prefix, baseURL, apiKey, model] = process.argv.slice(2);
const require = createRequire(prefix + '/node_modules/');
const OpenAI = require('openai');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30000 });

const models = await client.models.list();
assert.equal(models.data[0].id, model, 'models.list names the served model');

// Completions: greedy text, usage.
const c1 = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 12, temperature: 0 });
assert.equal(c1.object, 'text_completion');
assert.ok(c1.choices[0].text.length > 0, 'completion text is not empty');
assert.equal(c1.usage.completion_tokens + c1.usage.prompt_tokens, c1.usage.total_tokens);
assert.ok(['stop', 'length'].includes(c1.choices[0].finish_reason));

// Streaming completion reproduces the greedy text.
const s1 = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 12, temperature: 0,
                                              stream: true, stream_options: { include_usage: true } });
let streamed = '';
let usage = null;
for await (const chunk of s1) {
  if (chunk.choices.length) streamed += chunk.choices[0].text;
  if (chunk.usage) usage = chunk.usage;
}
assert.equal(streamed, c1.choices[0].text, 'streamed completion equals the non-streamed one');
assert.equal(usage.completion_tokens, c1.usage.completion_tokens);

// Chat, full and streamed.
const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 10, temperature: 0 });
assert.equal(chat.object, 'chat.completion');
assert.equal(chat.choices[0].message.role, 'assistant');
const chatStream = await client.chat.completions.create({ model, messages, max_tokens: 10, temperature: 0, stream: true });
let chatText = '';
let role = null;
for await (const chunk of chatStream) {
  const delta = chunk.choices[0]?.delta ?? {};
  if (delta.role) role = delta.role;
  if (delta.content) chatText += delta.content;
}
assert.equal(role, 'assistant');
assert.equal(chatText, chat.choices[0].message.content, 'streamed chat equals the non-streamed chat');

// Seeded sampling is reproducible; n > 1 gives n choices.
const seeded = { model, prompt: 'The little dog', max_tokens: 16, temperature: 1.0, seed: 1234 };
const a = await client.completions.create(seeded);
const b = await client.completions.create(seeded);
assert.equal(a.choices[0].text, b.choices[0].text, 'same seed -> same text');
const many = await client.completions.create({ ...seeded, n: 3 });
assert.equal(many.choices.length, 3);
assert.equal(many.choices[0].text, a.choices[0].text, 'choice 0 of n=3 equals the n=1 draw');

// Errors surface as the client's typed errors with the HTTP status.
await assert.rejects(client.completions.create({ model, prompt: 'x', max_tokens: -1 }), (e) => e.status === 400);
const unauthorized = new OpenAI({ baseURL, apiKey: 'wrong-key', maxRetries: 0 });
await assert.rejects(unauthorized.models.list(), (e) => e.status === 401);

console.log('openai client checks passed');
