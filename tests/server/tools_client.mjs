// Tool calling with the official `openai` npm client (v4) against `deepinfer serve` on a random-weight
// model with a real tokenizer and chat template (tests/server/tools_e2e_test.py starts it): auto,
// required, named, parallel and streamed calls, then a round trip (the call and its result sent back).
// Prints "ROUNDTRIP <request json>" so the Python side can check that conversation's prompt against
// Jinja2. Exits non-zero on the first failed check.
//
//   node tools_client.mjs NPM_PREFIX BASE_URL API_KEY MODEL FAMILY
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const [prefix, baseURL, apiKey, model, family] = process.argv.slice(2);
const require = createRequire(prefix + '/node_modules/');
const OpenAI = require('openai');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });

const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather forecast', parameters: {
    type: 'object', additionalProperties: false, required: ['city', 'days'],
    properties: { city: { type: 'string', enum: ['Paris', 'Tokyo', 'Lima'] },
                  days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { type: 'string', enum: ['c', 'f'] } } } } },
  { type: 'function', function: { name: 'get_time', parameters: {
    type: 'object', additionalProperties: false, required: ['tz'],
    properties: { tz: { type: 'string', maxLength: 6 } } } } },
];

// The declared schemas, checked by hand (no validator package in node's stdlib).
function checkCall(call, allowed, where) {
  assert.equal(call.type, 'function', where);
  assert.ok(call.id && call.id.startsWith('call_'), where + ': id');
  assert.ok(allowed.includes(call.function.name), where + ': called ' + call.function.name);
  assert.equal(typeof call.function.arguments, 'string', where + ': arguments is a JSON string');
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'get_weather') {
    assert.deepEqual(Object.keys(args).filter((k) => !['city', 'days', 'unit'].includes(k)), [], where);
    assert.ok(['Paris', 'Tokyo', 'Lima'].includes(args.city), where + ': city');
    assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, where + ': days');
    if ('unit' in args) assert.ok(['c', 'f'].includes(args.unit), where + ': unit');
  } else {
    assert.deepEqual(Object.keys(args), ['tz'], where);
    assert.ok(typeof args.tz === 'string' && [...args.tz].length <= 6, where + ': tz');
  }
}

const messages = [{ role: 'user', content: 'Weather in Paris for two days, and the time in Lima?' }];
const names = ['get_weather', 'get_time'];

// auto: random weights rarely write a call; whatever comes back must be well-formed.
const auto = await client.chat.completions.create({ model, messages, tools, tool_choice: 'auto', max_tokens: 16 });
assert.ok(['stop', 'length', 'tool_calls'].includes(auto.choices[0].finish_reason));
for (const c of auto.choices[0].message.tool_calls ?? []) checkCall(c, names, 'auto');

// required, one call.
const required = await client.chat.completions.create({ model, messages, tools, tool_choice: 'required',
                                                         parallel_tool_calls: false, max_tokens: 200, seed: 1 });
assert.equal(required.choices[0].finish_reason, 'tool_calls');
assert.equal(required.choices[0].message.tool_calls.length, 1);
assert.equal(required.choices[0].message.content, null);
checkCall(required.choices[0].message.tool_calls[0], names, 'required');

// named.
const named = await client.chat.completions.create({ model, messages, tools, max_tokens: 200, seed: 2,
  tool_choice: { type: 'function', function: { name: 'get_weather' } } });
assert.equal(named.choices[0].finish_reason, 'tool_calls');
for (const c of named.choices[0].message.tool_calls) checkCall(c, ['get_weather'], 'named');

// parallel: one or more calls, each valid.
const parallel = await client.chat.completions.create({ model, messages, tools, tool_choice: 'required',
                                                         parallel_tool_calls: true, max_tokens: 220, seed: 5 });
assert.equal(parallel.choices[0].finish_reason, 'tool_calls');
assert.ok(parallel.choices[0].message.tool_calls.length >= 1);
for (const c of parallel.choices[0].message.tool_calls) checkCall(c, names, 'parallel');

// streamed: the deltas assemble into the same call as the non-streamed request with that seed.
const stream = await client.chat.completions.create({ model, messages, tools, max_tokens: 200, seed: 2, stream: true,
  tool_choice: { type: 'function', function: { name: 'get_weather' } } });
const calls = [];
const argumentDeltas = [];  // per call: deltas carrying arguments
let finish = null;
for await (const chunk of stream) {
  const choice = chunk.choices[0];
  if (!choice) continue;
  for (const d of choice.delta.tool_calls ?? []) {
    if (calls[d.index] === undefined) {
      // OpenAI's shape: a call's first delta has its id, type and name.
      assert.ok(d.id && d.type === 'function' && d.function?.name, 'first delta of a call: ' + JSON.stringify(d));
    } else {
      assert.ok(!d.function?.name, 'the name comes once: ' + JSON.stringify(d));
    }
    calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
    if (d.function?.arguments) argumentDeltas[d.index] = (argumentDeltas[d.index] ?? 0) + 1;
    if (d.id) calls[d.index].id = d.id;
    calls[d.index].function.name += d.function?.name ?? '';
    calls[d.index].function.arguments += d.function?.arguments ?? '';
  }
  finish = choice.finish_reason ?? finish;
}
assert.equal(finish, 'tool_calls');
for (const c of calls) checkCall(c, ['get_weather'], 'streamed');
assert.deepEqual(calls.map((c) => c.function.arguments),
                 named.choices[0].message.tool_calls.map((c) => c.function.arguments), 'streamed == non-streamed');
// The arguments arrive in fragments as they are generated, not in one piece at the end.
assert.ok(argumentDeltas.every((n) => n > 1), 'argument fragments per call: ' + JSON.stringify(argumentDeltas));
// The client's own accumulation (its stream helper) reconstructs the same calls.
const helper = client.beta.chat.completions.stream({ model, messages, tools, max_tokens: 200, seed: 2,
  tool_choice: { type: 'function', function: { name: 'get_weather' } } });
const assembled = await helper.finalChatCompletion();
assert.deepEqual(assembled.choices[0].message.tool_calls.map((c) => [c.id.length > 0, c.function.name, c.function.arguments]),
                 named.choices[0].message.tool_calls.map((c) => [true, c.function.name, c.function.arguments]),
                 'the stream helper assembles the non-streamed calls');

// Round trip: the call and its result go back; the server renders them into the prompt.
const call = required.choices[0].message.tool_calls[0];
const roundTrip = [...messages, required.choices[0].message,
  { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ ok: true, value: 21 }) }];
const answer = await client.chat.completions.create({ model, messages: roundTrip, tools, max_tokens: 8 });
assert.ok(answer.usage.prompt_tokens > required.usage.prompt_tokens, 'the history adds prompt tokens');
console.log('ROUNDTRIP ' + JSON.stringify({ messages: roundTrip, tools, max_tokens: 8,
                                            prompt_tokens: answer.usage.prompt_tokens }));
console.log(`tools_client (${family}): auto, required, named, parallel, streamed, round trip ok`);
