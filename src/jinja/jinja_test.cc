// The Jinja subset: whitespace control, expressions, statements, filters,
// tests, methods, and the limits that keep hostile templates bounded.
// Expected strings follow Python/Jinja2 semantics, worked out by hand.
#include <gtest/gtest.h>

#include "jinja/eval.h"

namespace deepinfer::jinja {
namespace {

Context TestContext() {
  ValueList messages = {
      Value::Dict({{"role", Value::String("user")}, {"content", Value::String("Hi")}}),
      Value::Dict({{"role", Value::String("assistant")}, {"content", Value::String("Yo")}}),
  };
  return {{"messages", Value::List(std::move(messages))},
          {"add_generation_prompt", Value::Bool(true)},
          {"bos_token", Value::String("<s>")}};
}

StatusOr<std::string> TryRender(const std::string& source, const RenderLimits& limits = {}) {
  DI_ASSIGN_OR_RETURN(Template t, Template::Parse(source));
  return t.Render(TestContext(), limits);
}

std::string R(const std::string& source) {
  StatusOr<std::string> out = TryRender(source);
  EXPECT_TRUE(out.ok()) << source << "\n" << out.status().ToString();
  return out.ok() ? *out : "<error>";
}

// The error message, or "" when rendering succeeded.
std::string Err(const std::string& source, const RenderLimits& limits = {}) {
  StatusOr<std::string> out = TryRender(source, limits);
  if (out.ok()) return "";
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  return out.status().message();
}

TEST(JinjaWhitespace, TrimAndLstripBlocks) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the
  // indentation before it; expression tags keep both.
  EXPECT_EQ(R("a\n  {% if true %}\n  x\n  {% endif %}\nb\n"), "a\n  x\nb");
  EXPECT_EQ(R("  {{ 'v' }}\n{# c #}\nz"), "  v\nz");
  EXPECT_EQ(R("x {%+ if true %}y{% endif %}"), "x y");
}

TEST(JinjaWhitespace, DashStripsAllWhitespace) {
  EXPECT_EQ(R("a {%- if true -%} b {% endif %}c"), "ab c");
  EXPECT_EQ(R("{%- for m in messages -%}\n  {{ m.role }}\n{%- endfor %}"), "userassistant");
  EXPECT_EQ(R("a  {{- 'b' -}}  \n c"), "abc");
  EXPECT_EQ(R("a {#- note -#} b"), "ab");
}

TEST(JinjaWhitespace, TrailingNewlineAndRaw) {
  EXPECT_EQ(R("x\n"), "x");
  EXPECT_EQ(R("x\n\n"), "x\n");
  EXPECT_EQ(R("{% raw %}{{ not parsed }}{% endraw %}"), "{{ not parsed }}");
}

TEST(JinjaExpressions, LiteralsAndRendering) {
  EXPECT_EQ(R("{{ none }}|{{ [1, 'a', none, true, 1.5] }}|{{ {'k': 'v'} }}"),
            "None|[1, 'a', None, True, 1.5]|{'k': 'v'}");
  EXPECT_EQ(R("{{ 'a\\tb' }}{{ \"q'\" }}{{ '\\u00e9' }}"), "a\tbq'\xC3\xA9");
  EXPECT_EQ(R("{{ \"it's\" }}{{ [\"it's\"] }}"), "it's[\"it's\"]");
  EXPECT_EQ(R("{{ 'a' 'b' }}{{ (1) }}"), "ab1");
  EXPECT_EQ(R("{{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1e-7 }} {{ 2.5e-5 }} {{ 4 / 2 }}"),
            "1e+20 0.30000000000000004 1e-07 2.5e-05 2.0");
}

TEST(JinjaExpressions, Arithmetic) {
  EXPECT_EQ(R("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }}"),
            "3 -4 2 3.5 1024 0.5");
  EXPECT_EQ(R("{{ (1 + 2) * 3 }} {{ 2 + 3 * 4 }} {{ 10 - 2 - 3 }} {{ -2|abs }}"), "9 14 5 2");
  EXPECT_EQ(R("{{ 'a' * 3 }}{{ [1] * 2 }}"), "aaa[1, 1]");
  EXPECT_EQ(R("{{ [1, 2] + [3] }}{{ 'a' ~ 1 ~ none ~ true }}"), "[1, 2, 3]a1NoneTrue");
  EXPECT_NE(Err("{{ 'x' ~ 1 + 2 }}"), "");  // ~ binds tighter than +: ('x1') + 2
  EXPECT_NE(Err("{{ 1 / 0 }}").find("division by zero"), std::string::npos);
  EXPECT_NE(Err("{{ 9223372036854775807 + 1 }}").find("overflow"), std::string::npos);
}

TEST(JinjaExpressions, ComparisonsAndLogic) {
  EXPECT_EQ(R("{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ 1 == 1.0 }}{{ [1, 2] == [1, 2] }}{{ x == y }}"),
            "TrueFalseTrueTrueTrue");
  EXPECT_EQ(R("{{ 'b' in 'abc' }}{{ 'x' not in 'abc' }}{{ 1 in [1] }}{{ 'a' in {'a': 1} }}"),
            "TrueTrueTrueTrue");
  // and/or return the deciding operand and short-circuit.
  EXPECT_EQ(R("{{ 0 or 'z' }}{{ 'a' and 'b' }}{{ true or undefined_fn() }}{{ false and x.y }}"),
            "zbTrueFalse");
  EXPECT_EQ(R("{{ not true and false }}{{ not x is defined }}"), "FalseTrue");
  EXPECT_EQ(R("{{ 'a' if false else 'b' if false else 'c' }}[{{ 1 if false }}]"), "c[]");
}

TEST(JinjaExpressions, IndexingAndSlicing) {
  EXPECT_EQ(R("{{ messages[0]['content'] }}{{ messages[-1].role }}{{ [1, 2][5] }}{{ {'a': 1}.b }}"),
            "Hiassistant");
  EXPECT_EQ(R("{{ 'abc'[::-1] }}{{ [1, 2, 3][1:] }}{{ [1, 2, 3, 4, 5][::2] }}{{ [1, 2, 3][:-1] }}"),
            "cba[2, 3][1, 3, 5][1, 2]");
  EXPECT_EQ(R("{{ [1, 2, 3, 4][3:0:-1] }}{{ 'h\xC3\xA9llo'[1:3] }}{{ 'abc'.1 }}"), "[4, 3, 2]\xC3\xA9lb");
  EXPECT_NE(Err("{{ [1][::0] }}").find("step"), std::string::npos);
}

TEST(JinjaUndefined, SemanticsMatchJinja) {
  EXPECT_EQ(R("[{{ x }}]{{ x is defined }}{{ x|default('d') }}{{ x|length }}{% for a in x %}n{% endfor %}"),
            "[]False"
            "d0");
  EXPECT_EQ(R("{% if x %}y{% else %}n{% endif %}{{ none|default('n') }}{{ ''|default('e', true) }}"),
            "nNonee");
  // Reading an attribute of an undefined value is an error, as in Jinja.
  EXPECT_NE(Err("line\n  {{ x.y }}").find("line 2:"), std::string::npos);
}

TEST(JinjaStatements, ForLoop) {
  EXPECT_EQ(R("{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
              "{{ loop.length }}{{ loop.revindex }};{% endfor %}"),
            "10TrueFalse22;21FalseTrue21;");
  EXPECT_EQ(R("{% for a in [] %}{{ a }}{% else %}E{% endfor %}"), "E");
  EXPECT_EQ(
      R("{% for m in messages if m.role == 'assistant' %}{{ loop.index }}/{{ loop.length }}{{ m.content }}"
        "{% endfor %}"),
      "1/1Yo");
  EXPECT_EQ(R("{% for k, v in {'a': 1, 'b': 2}|items %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(R("{% for c in 'h\xC3\xA9' %}{{ c }},{% endfor %}"), "h,\xC3\xA9,");
  EXPECT_EQ(R("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}"
              "{% endif %}{{ i }}{% endfor %}"),
            "0134");
  EXPECT_EQ(
      R("{% for i in [1, 2] %}{% for j in [3] %}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %}"),
      "1112");
}

TEST(JinjaStatements, SetScopingAndNamespace) {
  // A set inside a loop stays in that iteration; namespace() carries state.
  EXPECT_EQ(R("{% for i in [1, 2] %}[{{ x }}]{% set x = i %}{% endfor %}{{ x }}"), "[][]");
  EXPECT_EQ(R("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}"), "2");
  EXPECT_EQ(R("{% set ns = namespace(n=0, s='') %}{% for i in range(5) %}{% set ns.n = ns.n + i %}"
              "{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}"),
            "10 01234");
  EXPECT_EQ(R("{% set x %}block {{ 1 + 1 }}{% endset %}[{{ x }}]"), "[block 2]");
  EXPECT_NE(Err("{% set y = 1 %}{% set y.a = 2 %}").find("not a namespace"), std::string::npos);
  EXPECT_NE(Err("{% set ns = namespace() %}{% set ns.a = ns %}"), "");
  EXPECT_NE(Err("{% set ns = namespace() %}{{ [ns] }}"), "");
}

TEST(JinjaStatements, Macros) {
  EXPECT_EQ(
      R("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{% set c = 5 %}{{ m(1) }}{{ m(3, b=4) }}"),
      "125345");
  EXPECT_EQ(R("{% macro greet(name) -%}\nHello {{ name }}!\n{%- endmacro %}{{ greet('x') }}"), "Hello x!");
  EXPECT_NE(Err("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}").find("nested too deeply"),
            std::string::npos);
  EXPECT_NE(Err("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}"), "");
}

TEST(JinjaFilters, Strings) {
  EXPECT_EQ(R("{{ '  hi  '|trim }}|{{ 'ab'|upper }}{{ 'AB'|lower }}{{ 'hello world'|title }}{{ "
              "'hELLO'|capitalize }}"),
            "hi|ABabHello WorldHello");
  EXPECT_EQ(R("{{ 'a-b-c'|replace('-', '+') }}{{ 5|string ~ 'x' }}{{ none|string }}{{ '<a>'|e }}"),
            "a+b+c5xNone&lt;a&gt;");
  EXPECT_EQ(R("{{ 'h\xC3\xA9llo'|length }}{{ [1, 2]|count }}{{ {'a': 1}|length }}"), "521");
  EXPECT_EQ(R("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}"), "a\n  b\n\n  c|  a\n  b");
}

TEST(JinjaFilters, Sequences) {
  EXPECT_EQ(R("{{ ['a', 'b']|join(', ') }}{{ [1, 2]|join }}{{ messages|map(attribute='role')|join('/') }}"),
            "a, b12user/assistant");
  EXPECT_EQ(R("{{ [1, 2, 3]|first }}{{ [1, 2, 3]|last }}{{ 'abc'|first }}[{{ []|first }}]"), "13a[]");
  EXPECT_EQ(R("{% for m in messages|selectattr('role', 'equalto', 'user') %}{{ m.content }}{% endfor %}|"
              "{% for m in messages|rejectattr('role', 'equalto', 'user') %}{{ m.content }}{% endfor %}"),
            "Hi|Yo");
  EXPECT_EQ(R("{{ [3, 1, 2]|sort }}{{ ['b', 'A', 'c']|sort }}{{ [3, 1, 2]|sort(reverse=true) }}"),
            "[1, 2, 3]['A', 'b', 'c'][3, 2, 1]");
  EXPECT_EQ(R("{{ [1, 2, 1]|unique|list }}{{ [1, 2]|reverse|list }}{{ 'abc'|reverse }}{{ [1, 2, 3]|sum }}"),
            "[1, 2][2, 1]cba6");
  EXPECT_EQ(R("{{ [1, 2, 3]|select('odd')|list }}{{ ['a', 'B']|map('lower')|join }}"), "[1, 3]ab");
  EXPECT_EQ(
      R("{{ '3'|int + 1 }}{{ 'x'|int }}{{ 3.7|int }}{{ '2.5'|float }}{{ 2.5|round }}{{ 2.567|round(2) }}"),
      "4032.52.02.57");
}

TEST(JinjaFilters, ToJsonMatchesHuggingFace) {
  // json.dumps(x, ensure_ascii=False): ", " and ": " separators, non-ASCII kept.
  EXPECT_EQ(R("{{ {'a': [1, 2.5, none, true, '\xC3\xA9\"\\n']}|tojson }}"),
            "{\"a\": [1, 2.5, null, true, \"\xC3\xA9\\\"\\n\"]}");
  EXPECT_EQ(R("{{ {'b': 1, 'a': []}|tojson(indent=2) }}"), "{\n  \"b\": 1,\n  \"a\": []\n}");
  EXPECT_EQ(R("{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}{{ '\\x01'|tojson }}"),
            "{\"a\": 2, \"b\": 1}\"\\u0001\"");
  EXPECT_NE(Err("{{ x|tojson }}"), "");
}

TEST(JinjaTests, Builtins) {
  EXPECT_EQ(
      R("{{ none is none }}{{ 1 is number }}{{ 'a' is string }}{{ [1] is sequence }}{{ {} is mapping }}"),
      "TrueTrueTrueTrueTrue");
  EXPECT_EQ(
      R("{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 1 is true }}"),
      "TrueTrueTrueFalseFalse");
  EXPECT_EQ(R("{{ false is false }}{{ x is not defined }}{{ messages[0].content is not none }}"),
            "TrueTrueTrue");
}

TEST(JinjaMethods, StringsAndDicts) {
  EXPECT_EQ(R("{{ ' a b '.split() }}{{ 'a,b,,c'.split(',') }}{{ 'a b c'.split(' ', 1) }}{{ '  x  y "
              "'.split(none, 1) }}"),
            "['a', 'b']['a', 'b', '', 'c']['a', 'b c']['x', 'y ']");
  EXPECT_EQ(R("{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nhi\\n'.lstrip('\\n') }}|{{ 'hi  '.rstrip() }}"),
            "hi|hi\n|hi");
  EXPECT_EQ(R("{{ 'abc'.startswith('a') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith(('x', 'a')) }}"),
            "TrueTrueTrue");
  EXPECT_EQ(R("{{ 'aaa'.replace('a', 'b', 2) }}{{ 'ab'.replace('', '.') }}{{ 'hello'.find('l') }}{{ ', "
              "'.join(['a', 'b']) }}"),
            "bba.a.b.2a, b");
  EXPECT_EQ(R("{{ {'a': 1}.get('a') }}{{ {'a': 1}.get('b') }}{{ {'a': 1}.get('b', 2) }}{{ {'a': 1, 'b': "
              "2}.keys()|list }}"),
            "1None2['a', 'b']");
  EXPECT_EQ(R("{% for k, v in {'x': 3}.items() %}{{ k }}{{ v }}{% endfor %}"), "x3");
  EXPECT_NE(Err("{{ 'a'.nosuch() }}").find("no method"), std::string::npos);
}

TEST(JinjaGlobals, RangeNamespaceDictRaise) {
  EXPECT_EQ(R("{{ range(3)|list }}{{ range(2, 10, 3)|list }}{{ range(5, 0, -2)|list }}"),
            "[0, 1, 2][2, 5, 8][5, 3, 1]");
  EXPECT_EQ(R("{% set d = dict(a=1, b='x') %}{{ d.a }}{{ d['b'] }}"), "1x");
  EXPECT_NE(Err("{{ raise_exception('boom') }}").find("boom"), std::string::npos);
  EXPECT_EQ(R("{{ strftime_now('%Y')|length }}"), "4");
  EXPECT_NE(Err("{{ range(1, 2, 0) }}"), "");
}

TEST(JinjaErrors, SyntaxErrorsHaveLineAndColumn) {
  struct Case {
    const char* source;
    const char* where;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"{% if true %}unterminated", "line 1:"},
           {"{% for %}", "line 1:8"},
           {"a\n{{ 1 + }}", "line 2:8"},
           {"{% endif %}", "line 1:4"},
           {"{% include 'x' %}", "unsupported tag"},
           {"{{ 'abc }}", "unterminated string"},
           {"{{ a | nofilter }}", "unknown filter"},
           {"{{ a is nosuchtest }}", "unknown test"},
           {"{% break %}", "outside a for loop"},
           {"{{ a ]}}", "line 1:6"},
           {"{# open comment", "unterminated comment"},
           {"{{ 99999999999999999999 }}", "out of range"},
       }) {
    const std::string msg = Err(c.source);
    EXPECT_NE(msg.find(c.where), std::string::npos) << c.source << " -> " << msg;
  }
}

TEST(JinjaLimits, DeepNestingIsRejectedNotRecursed) {
  EXPECT_NE(
      Err("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").find("nested too deeply"),
      std::string::npos);
  EXPECT_NE(Err("{{ " + std::string(5000, '-') + "1 }}").find("nested too deeply"), std::string::npos);
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_NE(Err(chain + " }}").find("nested too deeply"), std::string::npos);
  std::string blocks;
  for (int i = 0; i < 500; ++i) blocks += "{% if true %}";
  EXPECT_NE(Err(blocks).find("nested too deeply"), std::string::npos);
  EXPECT_NE(Err("{% set ns = namespace(v=1) %}{% for i in range(100) %}{% set ns.v = [ns.v] %}{% endfor %}")
                .find("nested too deeply"),
            std::string::npos);
}

TEST(JinjaLimits, RunawayWorkIsBounded) {
  RenderLimits small;
  small.max_steps = 100000;
  small.max_output_bytes = 1 << 16;
  small.max_alloc_bytes = 1 << 20;
  EXPECT_NE(Err("{% for i in range(100000000) %}{% endfor %}", small).find("budget"), std::string::npos);
  EXPECT_NE(Err("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", small)
                .find("budget"),
            std::string::npos);
  EXPECT_NE(
      Err("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
          small),
      "");
  EXPECT_NE(Err("{% set ns = namespace(s=[1]) %}{% for i in range(60) %}{% set ns.s = [ns.s, ns.s] %}"
                "{% endfor %}{{ ns.s }}",
                small),
            "");
  EXPECT_NE(Err("{% for i in range(100000) %}xxxxxxxxxx{% endfor %}", small), "");
  EXPECT_NE(Err("{{ 'ab' * 100000000 }}", small), "");
  EXPECT_NE(Err("{{ 'a'.replace('', 'xxxxxxxxxxxxxxxxxxxxxxx') * 100000 }}", small), "");
}

TEST(JinjaBuiltins, EveryKnownNameIsImplemented) {
  // The parser accepts exactly the names the evaluator implements.
  Budget budget{RenderLimits{}};
  for (const char* f :
       {"abs",    "capitalize", "count",   "d",       "default", "e",      "escape", "first",      "float",
        "indent", "int",        "items",   "join",    "last",    "length", "list",   "lower",      "map",
        "reject", "rejectattr", "replace", "reverse", "round",   "safe",   "select", "selectattr", "sort",
        "string", "sum",        "title",   "tojson",  "trim",    "unique", "upper"}) {
    EXPECT_TRUE(IsKnownFilter(f)) << f;
    StatusOr<Value> v = ApplyFilter(f, Value(), CallArgs{}, &budget);
    if (!v.ok()) {
      EXPECT_EQ(v.status().message().find("unknown filter"), std::string::npos) << f;
    }
  }
  EXPECT_FALSE(IsKnownFilter("wordwrap"));
  EXPECT_FALSE(IsKnownTest("escaped"));
}

}  // namespace
}  // namespace deepinfer::jinja
