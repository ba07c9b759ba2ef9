// Drives /v1/responses of a running `deepinfer serve` with the official `openai` npm client (v4):
// plain text, instructions, streaming (raw events and the client's ResponseStream helper) and the
// structured-output form `text.format: {type: "json_schema"}` (strict: a 400; best effort: `warnings`). Every generated text is checked
// against the same request sent to /v1/chat/completions (greedy, so they must be equal). Exits
// non-zero on the first failed check.
//
//   node responses_client.mjs NPM_PREFIX BASE_URL API_KEY MODEL
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const [prefix, baseURL, apiKey, model] = process.argv.slice(2);
const require = createRequire(prefix + '/node_modules/');
const OpenAI = require('openai');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30000 });

const chatText = async (messages, extra = {}) => {
  const c = await client.chat.completions.create({ model, messages, temperature: 0, ...extra });
  return c;
};

// Plain text: input string, output_text equals the chat route's greedy answer to one user message.
const prompt = 'Once upon a time';
const r1 = await client.responses.create({ model, input: prompt, max_output_tokens: 12, temperature: 0 });
assert.equal(r1.object, 'response');
assert.match(r1.id, /^resp_/);
assert.equal(r1.output.length, 1);
assert.equal(r1.output[0].type, 'message');
assert.equal(r1.output[0].role, 'assistant');
const c1 = await chatText([{ role: 'user', content: prompt }], { max_tokens: 12 });
assert.equal(r1.output_text, c1.choices[0].message.content, 'responses text == chat text');
assert.equal(r1.usage.input_tokens, c1.usage.prompt_tokens);
assert.equal(r1.usage.output_tokens, c1.usage.completion_tokens);
assert.equal(r1.usage.total_tokens, r1.usage.input_tokens + r1.usage.output_tokens);
// 12 tokens is a cut unless the model stopped on its own.
if (c1.choices[0].finish_reason === 'length') {
  assert.equal(r1.status, 'incomplete');
  assert.equal(r1.incomplete_details.reason, 'max_output_tokens');
} else {
  assert.equal(r1.status, 'completed');
}

// instructions -> a system message first; input as a list of messages with text parts.
const r2 = await client.responses.create({
  model, instructions: 'Be brief.', max_output_tokens: 10, temperature: 0,
  input: [{ role: 'user', content: [{ type: 'input_text', text: 'Tell me' }, { type: 'input_text', text: 'a story.' }] }],
});
const c2 = await chatText([{ role: 'system', content: 'Be brief.' },
                           { role: 'user', content: [{ type: 'text', text: 'Tell me' }, { type: 'text', text: 'a story.' }] }],
                          { max_tokens: 10 });
assert.equal(r2.output_text, c2.choices[0].message.content, 'instructions + input_text parts == chat system + text parts');
assert.equal(r2.usage.input_tokens, c2.usage.prompt_tokens);
assert.equal(r2.instructions, 'Be brief.');

// Streaming, raw events: the documented order, sequence numbers 0, 1, 2, ..., deltas adding up to
// the final text, which equals the non-streamed one.
const s1 = await client.responses.create({ model, input: prompt, max_output_tokens: 12, temperature: 0, stream: true });
const types = [];
let deltas = '';
let final = null;
let seq = 0;
for await (const event of s1) {
  assert.equal(event.sequence_number, seq++, 'sequence numbers count up from 0');
  types.push(event.type);
  if (event.type === 'response.output_text.delta') deltas += event.delta;
  if (event.type === 'response.completed' || event.type === 'response.incomplete') final = event.response;
}
const head = ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added'];
assert.deepEqual(types.slice(0, 4), head);
const tail = types.slice(-4);
assert.deepEqual(tail.slice(0, 3), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done']);
assert.ok(['response.completed', 'response.incomplete'].includes(tail[3]));
assert.ok(types.slice(4, -4).every((t) => t === 'response.output_text.delta'), 'only deltas in between');
assert.equal(deltas, r1.output_text, 'streamed deltas == non-streamed text');
assert.equal(final.output[0].content[0].text, r1.output_text);
assert.equal(final.usage.output_tokens, r1.usage.output_tokens);
assert.equal(final.status, r1.status);

// Structured output: text.format json_schema; the text parses and fits the schema.
const schema = {
  type: 'object',
  properties: {
    zeta: { type: 'boolean' },
    alpha: { type: 'string', enum: ['red', 'green', 'blue'] },
    mid: { type: 'integer', minimum: 0, maximum: 9 },
  },
  required: ['zeta', 'alpha', 'mid'],
  additionalProperties: false,
};
const format = { type: 'json_schema', name: 'colour', schema, strict: true };
const r4 = await client.responses.create({ model, input: 'Pick a colour.', max_output_tokens: 60, temperature: 0,
                                          text: { format } });
assert.equal(r4.status, 'completed', 'the schema bounds the output: ' + r4.output_text);
const value = JSON.parse(r4.output_text);
assert.deepEqual(Object.keys(value).sort(), ['alpha', 'mid', 'zeta']);
assert.equal(typeof value.zeta, 'boolean');
assert.ok(['red', 'green', 'blue'].includes(value.alpha));
assert.ok(Number.isInteger(value.mid) && value.mid >= 0 && value.mid <= 9);
assert.deepEqual(r4.text.format, format, 'the response echoes text.format');
const c4 = await chatText([{ role: 'user', content: 'Pick a colour.' }], {
  max_tokens: 60, response_format: { type: 'json_schema', json_schema: { name: 'colour', schema, strict: true } },
});
assert.equal(r4.output_text, c4.choices[0].message.content, 'json_schema: responses == chat response_format');
// Streamed structured output gives the same text.
const s4 = await client.responses.create({ model, input: 'Pick a colour.', max_output_tokens: 60, temperature: 0,
                                          text: { format }, stream: true });
let structuredDeltas = '';
for await (const event of s4) if (event.type === 'response.output_text.delta') structuredDeltas += event.delta;
assert.equal(structuredDeltas, r4.output_text);
// The client's ResponseStream helper rebuilds the response from the events and fails on an event
// that does not fit (it finalizes on response.completed, which this request reaches).
const helper = client.responses.stream({ model, input: 'Pick a colour.', max_output_tokens: 60, temperature: 0,
                                         text: { format } });
let helperText = '';
helper.on('response.output_text.delta', (e) => { helperText += e.delta; });
const done = await helper.finalResponse();
assert.equal(done.status, 'completed');
assert.equal(done.output[0].content[0].text, r4.output_text, 'ResponseStream.finalResponse() == non-streamed');
assert.equal(helperText, r4.output_text);
// json_object: parses as an object.
const r5 = await client.responses.create({ model, input: 'JSON please.', max_output_tokens: 60, temperature: 0,
                                          text: { format: { type: 'json_object' } } });
if (r5.status === 'completed') assert.equal(typeof JSON.parse(r5.output_text), 'object');

// json_schema.strict through the client: a relaxed assertion (uniqueItems over strings) is a typed 400
// naming keyword and pointer; best effort returns the object with a top-level `warnings` list, which the
// client passes through untouched (chat and responses).
const loose = { type: 'object', properties: { ids: { type: 'array', items: { type: 'string', maxLength: 4 },
                                                     uniqueItems: true, maxItems: 2 } }, required: ['ids'] };
await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'ids' }], max_tokens: 8,
  response_format: { type: 'json_schema', json_schema: { name: 'ids', schema: loose, strict: true } } }),
  (e) => e.status === 400 && e.param === 'response_format' && /uniqueItems/.test(e.message) &&
         e.message.includes('#/properties/ids'));
const relaxed = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'ids' }],
  max_tokens: 8, response_format: { type: 'json_schema', json_schema: { name: 'ids', schema: loose } } });
assert.equal(relaxed.warnings.length, 1);
assert.equal(relaxed.warnings[0].pointer, '#/properties/ids');
assert.match(relaxed.warnings[0].keyword, /^uniqueItems/);
const relaxedResponse = await client.responses.create({ model, input: 'ids', max_output_tokens: 8,
  text: { format: { type: 'json_schema', name: 'ids', schema: loose, strict: false } } });
assert.equal(relaxedResponse.warnings[0].param, 'text.format');
await assert.rejects(client.responses.create({ model, input: 'ids', max_output_tokens: 8,
  text: { format: { type: 'json_schema', name: 'ids', schema: loose, strict: true } } }),
  (e) => e.status === 400 && e.param === 'text.format' && e.message.includes('#/properties/ids'));

// Errors: the client's typed errors, the param named in Responses terms.
await assert.rejects(client.responses.create({ model, input: prompt, max_output_tokens: 0 }),
                     (e) => e.status === 400 && e.param === 'max_output_tokens');
await assert.rejects(client.responses.create({ model, input: prompt, previous_response_id: 'resp_x' }),
                     (e) => e.status === 400 && e.param === 'previous_response_id');
await assert.rejects(client.responses.create({ model, input: prompt, temperature: -1 }),
                     (e) => e.status === 400 && e.param === 'temperature');
await assert.rejects(client.responses.create({ model, input: [] }), (e) => e.status === 400 && e.param === 'input');

// GET /v1/models/{id} through the client: the card /v1/models lists; an unknown id is a 404.
const card = await client.models.retrieve(model);
const listed = await client.models.list();
assert.deepEqual(card, listed.data[0]);
await assert.rejects(client.models.retrieve('no-such-model'), (e) => e.status === 404 && e.code === 'model_not_found');

console.log('responses client checks passed');
