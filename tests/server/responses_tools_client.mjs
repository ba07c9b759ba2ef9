// Function tools on /v1/responses with the official `openai` npm client (v4) against `deepinfer serve` on a
// random-weight model with a real tokenizer and chat template (tests/server/tools_e2e_test.py starts it):
// required, named, parallel, auto and none; streamed events (raw, and the client's ResponseStream helper,
// which rebuilds function_call items from them); then a round trip (the function_call item and a
// function_call_output sent back as input). Prints "CALL <where> <name> <arguments>" for every call, so
// the Python side validates the arguments against the declared schemas (python3-jsonschema), and
// "RESPONSES_ROUNDTRIP <json>" so it checks that conversation's prompt against Jinja2. Exits non-zero on
// the first failed check.
//
//   node responses_tools_client.mjs NPM_PREFIX BASE_URL API_KEY MODEL FAMILY
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const [prefix, baseURL, apiKey, model, family] = process.argv.slice(2);
const require = createRequire(prefix + '/node_modules/');
const OpenAI = require('openai');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });

// The Responses shape: flat {type, name, description, parameters, strict}.
const tools = [
  { type: 'function', name: 'get_weather', description: 'Weather forecast', strict: true, parameters: {
    type: 'object', additionalProperties: false, required: ['city', 'days'],
    properties: { city: { type: 'string', enum: ['Paris', 'Tokyo', 'Lima'] },
                  days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { type: 'string', enum: ['c', 'f'] } } } },
  { type: 'function', name: 'get_time', strict: true, parameters: {
    type: 'object', additionalProperties: false, required: ['tz'],
    properties: { tz: { type: 'string', maxLength: 6 } } } },
];
const names = ['get_weather', 'get_time'];
const input = [{ role: 'user', content: 'Weather in Paris for two days, and the time in Lima?' }];

function checkCallItem(item, allowed, where) {
  assert.equal(item.type, 'function_call', where + ': ' + JSON.stringify(item));
  assert.match(item.id, /^fc_/, where + ': id');
  assert.match(item.call_id, /^call_/, where + ': call_id');
  assert.equal(item.status, 'completed', where + ': status');
  assert.ok(allowed.includes(item.name), where + ': called ' + item.name);
  assert.equal(typeof item.arguments, 'string', where + ': arguments is a JSON string');
  JSON.parse(item.arguments);
  console.log(`CALL ${where} ${item.name} ${item.arguments}`);
}
const calls = (r) => r.output.filter((o) => o.type === 'function_call');

// required, one call: the output is that call alone.
const required = await client.responses.create({ model, input, tools, tool_choice: 'required',
                                                  parallel_tool_calls: false, max_output_tokens: 200, temperature: 0 });
assert.equal(required.status, 'completed');
assert.equal(required.output.length, 1, JSON.stringify(required.output));
checkCallItem(required.output[0], names, 'required');
assert.deepEqual(required.tools, tools, 'the response echoes tools as sent');
assert.equal(required.tool_choice, 'required');
assert.equal(required.parallel_tool_calls, false);

// named: only that function.
const namedChoice = { type: 'function', name: 'get_time' };
const named = await client.responses.create({ model, input, tools, tool_choice: namedChoice, max_output_tokens: 200,
                                               temperature: 0 });
assert.equal(named.status, 'completed');
assert.ok(calls(named).length >= 1);
for (const c of calls(named)) checkCallItem(c, ['get_time'], 'named');
assert.deepEqual(named.tool_choice, namedChoice);

// parallel: one or more calls, distinct ids.
const parallel = await client.responses.create({ model, input, tools, tool_choice: 'required',
                                                  parallel_tool_calls: true, max_output_tokens: 220, temperature: 1 });
assert.ok(calls(parallel).length >= 1);
for (const c of calls(parallel)) checkCallItem(c, names, 'parallel');
assert.equal(new Set(calls(parallel).map((c) => c.call_id)).size, calls(parallel).length, 'distinct call ids');

// auto: random weights rarely call; whatever comes back is well-formed. none: no calls.
const auto = await client.responses.create({ model, input, tools, max_output_tokens: 16, temperature: 0 });
for (const c of calls(auto)) checkCallItem(c, names, 'auto');
const none = await client.responses.create({ model, input, tools, tool_choice: 'none', max_output_tokens: 16,
                                              temperature: 0 });
assert.equal(calls(none).length, 0);
assert.equal(none.output[0].type, 'message');

// Streamed named call, raw events: output_item.added (arguments ""), argument deltas adding up to .done's
// arguments, output_item.done with the full item; the final response equals the non-streamed one (greedy).
const stream = await client.responses.create({ model, input, tools, tool_choice: namedChoice, max_output_tokens: 200,
                                                temperature: 0, stream: true });
const items = {};
let final = null;
let seq = 0;
for await (const e of stream) {
  assert.equal(e.sequence_number, seq++);
  if (e.type === 'response.output_item.added' && e.item.type === 'function_call') {
    assert.equal(e.item.arguments, '');
    assert.equal(e.item.status, 'in_progress');
    items[e.item.id] = { added: e.item, index: e.output_index, deltas: '' };
  } else if (e.type === 'response.function_call_arguments.delta') {
    items[e.item_id].deltas += e.delta;
    assert.equal(items[e.item_id].index, e.output_index);
  } else if (e.type === 'response.function_call_arguments.done') {
    assert.equal(e.arguments, items[e.item_id].deltas, 'deltas add up to the arguments');
    items[e.item_id].done = e.arguments;
  } else if (e.type === 'response.output_item.done' && e.item.type === 'function_call') {
    assert.equal(e.item.arguments, items[e.item.id].done);
    items[e.item.id].item = e.item;
  } else if (e.type === 'response.completed') {
    final = e.response;
  }
}
assert.ok(final, 'response.completed');
assert.deepEqual(Object.values(items).map((i) => i.item), calls(final));
for (const c of calls(final)) checkCallItem(c, ['get_time'], 'streamed');
assert.deepEqual(calls(final).map((c) => [c.name, c.arguments]), calls(named).map((c) => [c.name, c.arguments]),
                 'streamed == non-streamed (greedy)');

// The client's ResponseStream helper accumulates function_call items from the events (it throws on an
// event that does not fit what it has, e.g. a delta for an unknown output index).
const helper = client.responses.stream({ model, input, tools, tool_choice: namedChoice, max_output_tokens: 200,
                                         temperature: 0 });
let helperArgs = '';
helper.on('response.function_call_arguments.delta', (e) => { helperArgs += e.delta; });
const helped = await helper.finalResponse();
assert.deepEqual(calls(helped).map((c) => c.arguments), calls(named).map((c) => c.arguments));
assert.equal(helperArgs, calls(named).map((c) => c.arguments).join(''));

// Round trip: the call item as returned and its output go back as input.
const call = required.output[0];
const roundTrip = [...input, call, { type: 'function_call_output', call_id: call.call_id,
                                     output: JSON.stringify({ ok: true, value: 21 }) }];
const answer = await client.responses.create({ model, input: roundTrip, tools, max_output_tokens: 4, temperature: 0 });
assert.ok(answer.usage.input_tokens > required.usage.input_tokens, 'the history adds input tokens');
console.log('RESPONSES_ROUNDTRIP ' + JSON.stringify({ input: roundTrip, tools, input_tokens: answer.usage.input_tokens,
                                                      output_text: answer.output_text }));

// Errors name Responses fields.
await assert.rejects(client.responses.create({ model, input, tools: [{ type: 'web_search' }] }),
                     (e) => e.status === 400 && e.param === 'tools');
await assert.rejects(client.responses.create({ model, input, tools, tool_choice: { type: 'function', name: 'nope' } }),
                     (e) => e.status === 400 && e.param === 'tool_choice');
await assert.rejects(client.responses.create({ model, input, tool_choice: 'required' }),
                     (e) => e.status === 400 && e.param === 'tool_choice');
console.log(`responses_tools_client (${family}): required, named, parallel, auto, none, streamed, helper, round trip ok`);
