#include "server/request_fields.h"

#include <cmath>
#include <limits>

#include "core/log.h"

namespace deepinfer::server::fields {
namespace {

std::string Range(double lo, double hi) {
  auto fmt = [](double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
    std::string s = std::to_string(v);
    while (!s.empty() && s.back() == '0') s.pop_back();
    return s;
  };
  return "[" + fmt(lo) + ", " + fmt(hi) + "]";
}

MaybeError ParseStop(const json& body, const RequestLimits& limits, ParsedRequest* out) {
  const json* v = Find(body, "stop");
  if (!v) return std::nullopt;
  auto add = [&](const json& s) -> MaybeError {
    if (!s.is_string()) return BadRequest("'stop' must be a string or a list of strings", "stop");
    std::string text = s.get<std::string>();
    if (text.empty()) return BadRequest("'stop' strings must not be empty", "stop");
    out->stop.push_back(std::move(text));
    return std::nullopt;
  };
  if (v->is_array()) {
    if (static_cast<int64_t>(v->size()) > limits.max_stop_strings) {
      return BadRequest("'stop' has more than " + std::to_string(limits.max_stop_strings) + " strings",
                        "stop");
    }
    for (const json& s : *v) {
      if (auto e = add(s)) return e;
    }
    return std::nullopt;
  }
  return add(*v);
}

MaybeError ParseTokenIdList(const json& body, const char* name, int64_t vocab, std::vector<int32_t>* out) {
  const json* v = Find(body, name);
  if (!v) return std::nullopt;
  std::string what =
      std::string("'") + name + "' must be a list of token ids in [0, " + std::to_string(vocab) + ")";
  if (!v->is_array()) return BadRequest(what, name);
  for (const json& id : *v) {
    if (!id.is_number_integer()) return BadRequest(what, name);
    int64_t t = id.get<int64_t>();
    if (t < 0 || t >= vocab) return BadRequest(what, name);
    out->push_back(static_cast<int32_t>(t));
  }
  return std::nullopt;
}

MaybeError ParseLogitBias(const json& body, int64_t vocab, SamplingParams* sampling) {
  const json* v = Find(body, "logit_bias");
  if (!v) return std::nullopt;
  if (!v->is_object()) return BadRequest("'logit_bias' must be an object {token id: bias}", "logit_bias");
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    int64_t id = -1;
    if (!key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos) {
      id = std::stoll(key);
    }
    if (id < 0 || id >= vocab) {
      return BadRequest(
          "'logit_bias' key '" + key + "' is not a token id in [0, " + std::to_string(vocab) + ")",
          "logit_bias");
    }
    if (!it.value().is_number() || !std::isfinite(it.value().get<double>()) ||
        it.value().get<double>() < -100 || it.value().get<double>() > 100) {
      return BadRequest("'logit_bias' values must be numbers in [-100, 100]", "logit_bias");
    }
    sampling->logit_bias.emplace_back(static_cast<int32_t>(id), it.value().get<float>());
  }
  return std::nullopt;
}

// guided_json / guided_regex / guided_grammar / guided_choice / response_format:
// at most one of them.
MaybeError ParseStructured(const json& body, ParsedRequest* out) {
  int count = 0;
  auto set = [&](StructuredOutputSpec spec, const char* field) {
    out->structured = std::move(spec);
    out->structured_field = field;
    ++count;
  };
  if (const json* v = Find(body, "guided_json")) {
    if (v->is_object() || v->is_boolean()) {
      set({StructuredOutputSpec::Kind::kJsonSchema, v->dump(), {}}, "guided_json");
    } else if (v->is_string()) {
      set({StructuredOutputSpec::Kind::kJsonSchema, v->get<std::string>(), {}}, "guided_json");
    } else {
      return BadRequest("'guided_json' must be a JSON Schema (object or string)", "guided_json");
    }
  }
  if (const json* v = Find(body, "guided_regex")) {
    if (!v->is_string()) return BadRequest("'guided_regex' must be a string", "guided_regex");
    set({StructuredOutputSpec::Kind::kRegex, v->get<std::string>(), {}}, "guided_regex");
  }
  if (const json* v = Find(body, "guided_grammar")) {
    if (!v->is_string()) return BadRequest("'guided_grammar' must be a string", "guided_grammar");
    std::string g = v->get<std::string>();
    // GBNF rules use "::="; anything else is taken as Lark EBNF (vLLM's other dialect).
    auto kind = g.find("::=") != std::string::npos ? StructuredOutputSpec::Kind::kGbnf
                                                   : StructuredOutputSpec::Kind::kLark;
    set({kind, std::move(g), {}}, "guided_grammar");
  }
  if (const json* v = Find(body, "guided_choice")) {
    if (!v->is_array() || v->empty()) {
      return BadRequest("'guided_choice' must be a non-empty list of strings", "guided_choice");
    }
    StructuredOutputSpec spec{StructuredOutputSpec::Kind::kChoice, "", {}};
    for (const json& c : *v) {
      if (!c.is_string()) {
        return BadRequest("'guided_choice' must be a non-empty list of strings", "guided_choice");
      }
      spec.choices.push_back(c.get<std::string>());
    }
    set(std::move(spec), "guided_choice");
  }
  if (const json* v = Find(body, "response_format")) {
    const char* what = "'response_format' must be {\"type\": \"text\" | \"json_object\" | \"json_schema\"}";
    if (!v->is_object()) return BadRequest(what, "response_format");
    const json* type = Find(*v, "type");
    if (!type || !type->is_string()) return BadRequest(what, "response_format");
    std::string t = type->get<std::string>();
    if (t == "json_object") {
      set({StructuredOutputSpec::Kind::kJsonObject, "", {}}, "response_format");
    } else if (t == "json_schema") {
      const json* js = Find(*v, "json_schema");
      const json* schema = js && js->is_object() ? Find(*js, "schema") : nullptr;
      if (!schema || !(schema->is_object() || schema->is_boolean())) {
        return BadRequest("'response_format.json_schema.schema' must be a JSON Schema object",
                          "response_format");
      }
      StructuredOutputSpec spec{StructuredOutputSpec::Kind::kJsonSchema, schema->dump(), {}};
      // OpenAI's json_schema.strict: refuse what cannot be enforced exactly
      // (absent = best effort, relaxed assertions reported as warnings).
      if (const json* strict = Find(*js, "strict")) {
        if (!strict->is_boolean()) {
          return BadRequest("'response_format.json_schema.strict' must be a boolean", "response_format");
        }
        spec.strict = strict->get<bool>();
      }
      set(std::move(spec), "response_format");
    } else if (t != "text") {
      return BadRequest(what, "response_format");
    }
  }
  if (count > 1) {
    return BadRequest(
        "give at most one of guided_json, guided_regex, guided_grammar, guided_choice, response_format");
  }
  return std::nullopt;
}

}  // namespace

const json* Find(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

MaybeError Bool(const json& body, const char* name, bool* out) {
  const json* v = Find(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return BadRequest(std::string("'") + name + "' must be a boolean", name);
  *out = v->get<bool>();
  return std::nullopt;
}

MaybeError Int(const json& body, const char* name, int64_t lo, int64_t hi, int64_t* out) {
  const json* v = Find(body, name);
  if (!v) return std::nullopt;
  auto bad = [&] {
    return BadRequest(std::string("'") + name + "' must be an integer in " + Range(lo, hi), name);
  };
  int64_t value = 0;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return bad();
    value = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    value = v->get<int64_t>();
  } else if (v->is_number_float()) {
    // Some clients serialize integers as 16.0; accept exact integers only.
    double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e15) return bad();
    value = static_cast<int64_t>(d);
  } else {
    return bad();
  }
  if (value < lo || value > hi) return bad();
  *out = value;
  return std::nullopt;
}

MaybeError PromptLogprobs(const json& body, const RequestLimits& limits, ParsedRequest* out) {
  int64_t k = -1;
  if (auto e = Int(body, "prompt_logprobs", 0, limits.max_logprobs, &k)) return e;
  if (k >= 0 && out->stream) {
    return BadRequest("'prompt_logprobs' is not available with \"stream\": true", "prompt_logprobs");
  }
  out->prompt_logprobs = static_cast<int32_t>(k);
  return std::nullopt;
}

MaybeError Number(const json& body, const char* name, double lo, double hi, double* out) {
  const json* v = Find(body, name);
  if (!v) return std::nullopt;
  double d = v->is_number() ? v->get<double>() : std::nan("");
  if (!std::isfinite(d) || d < lo || d > hi) {
    return BadRequest(std::string("'") + name + "' must be a number in " + Range(lo, hi), name);
  }
  *out = d;
  return std::nullopt;
}

MaybeError String(const json& body, const char* name, std::string* out) {
  const json* v = Find(body, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) return BadRequest(std::string("'") + name + "' must be a string", name);
  *out = v->get<std::string>();
  return std::nullopt;
}

// An unsupported field sent with the value that asks for what this server
// does anyway (clients often send vLLM's defaults explicitly).
static bool IsBehaviourWeHave(const std::string& key, const json& v) {
  if (key == "skip_special_tokens" || key == "spaces_between_special_tokens") return v == true;
  if (key == "use_beam_search" || key == "include_stop_str_in_output" ||
      key == "return_tokens_as_token_ids") {
    return v == false;
  }
  if (key == "length_penalty") return v.is_number() && v.get<double>() == 1.0;
  if (key == "bad_words" || key == "allowed_token_ids" || key == "logits_processors")
    return v.is_array() && v.empty();
  if (key == "service_tier") return v == "auto" || v == "default";
  return false;
}

MaybeError CheckFieldNames(const json& body, std::initializer_list<const char*> known,
                           std::initializer_list<const char*> unsupported) {
  // Fields every API takes (ParseCommonFields).
  static constexpr const char* kCommon[] = {"model",
                                            "user",
                                            "n",
                                            "stream",
                                            "stream_options",
                                            "temperature",
                                            "top_p",
                                            "top_k",
                                            "min_p",
                                            "presence_penalty",
                                            "frequency_penalty",
                                            "repetition_penalty",
                                            "logit_bias",
                                            "seed",
                                            "stop",
                                            "stop_token_ids",
                                            "ignore_eos",
                                            "priority",
                                            "guided_json",
                                            "guided_regex",
                                            "guided_grammar",
                                            "guided_choice",
                                            "response_format",
                                            "min_tokens",
                                            "add_special_tokens",
                                            "request_id",
                                            "metadata",
                                            "store"};
  // vLLM / OpenAI fields whose behaviour this server does not have: a
  // silent 200 would hand back output that ignores them.
  static constexpr const char* kUnsupported[] = {"use_beam_search",
                                                 "length_penalty",
                                                 "include_stop_str_in_output",
                                                 "skip_special_tokens",
                                                 "spaces_between_special_tokens",
                                                 "bad_words",
                                                 "allowed_token_ids",
                                                 "logits_processors",
                                                 "guided_whitespace_pattern",
                                                 "structural_tag",
                                                 "return_tokens_as_token_ids",
                                                 "kv_transfer_params",
                                                 "vllm_xargs",
                                                 "cache_salt",
                                                 "service_tier"};
  auto in = [](const std::string& key, const auto& list) {
    for (const char* name : list) {
      if (key == name) return true;
    }
    return false;
  };
  std::string unknown;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& key = it.key();
    if (in(key, unsupported) || in(key, kUnsupported)) {
      if (it->is_null() || IsBehaviourWeHave(key, *it)) continue;
      return BadRequest("'" + key + "' is not supported by this server", key);
    }
    if (in(key, known) || in(key, kCommon)) continue;
    unknown += (unknown.empty() ? "" : ", ") + key;
  }
  if (!unknown.empty()) DI_LOG_WARN("request: ignoring unknown field(s) %s", unknown.c_str());
  return std::nullopt;
}

MaybeError ParseCommonFields(const json& body, const RequestLimits& limits, ParsedRequest* out) {
  constexpr int64_t kI32 = std::numeric_limits<int32_t>::max();
  int64_t min_tokens = 0;
  if (auto e = Int(body, "min_tokens", 0, kI32, &min_tokens)) return e;
  out->min_tokens = static_cast<int32_t>(min_tokens);
  if (const json* v = Find(body, "add_special_tokens")) {
    if (!v->is_boolean()) return BadRequest("'add_special_tokens' must be a boolean", "add_special_tokens");
    out->add_special_tokens = v->get<bool>();
  }
  if (auto e = String(body, "model", &out->model)) return e;
  if (auto e = String(body, "user", &out->user)) return e;
  int64_t n = 1;
  if (auto e = Int(body, "n", 1, limits.max_n, &n)) return e;
  out->n = static_cast<int32_t>(n);
  if (auto e = Bool(body, "stream", &out->stream)) return e;
  if (const json* so = Find(body, "stream_options")) {
    if (!so->is_object()) return BadRequest("'stream_options' must be an object", "stream_options");
    if (auto e = Bool(*so, "include_usage", &out->include_usage)) {
      e->param = "stream_options";
      return e;
    }
    if (!out->stream) return BadRequest("'stream_options' needs \"stream\": true", "stream_options");
  }

  SamplingParams& s = out->sampling;
  if (auto e = Number(body, "temperature", 0.0, 100.0, &s.temperature)) return e;
  if (auto e = Number(body, "top_p", 0.0, 1.0, &s.top_p)) return e;
  if (s.top_p <= 0.0) return BadRequest("'top_p' must be in (0, 1]", "top_p");
  int64_t top_k = 0;
  if (auto e = Int(body, "top_k", -1, kI32, &top_k)) return e;
  s.top_k = top_k < 0 ? 0 : top_k;  // vLLM: -1 = off
  if (auto e = Number(body, "min_p", 0.0, 1.0, &s.min_p)) return e;
  if (auto e = Number(body, "presence_penalty", -2.0, 2.0, &s.presence_penalty)) return e;
  if (auto e = Number(body, "frequency_penalty", -2.0, 2.0, &s.frequency_penalty)) return e;
  if (auto e = Number(body, "repetition_penalty", 0.0, 100.0, &s.repetition_penalty)) return e;
  if (s.repetition_penalty <= 0.0) {
    return BadRequest("'repetition_penalty' must be > 0", "repetition_penalty");
  }
  if (auto e = ParseLogitBias(body, limits.vocab_size, &s)) return e;
  if (const json* seed = Find(body, "seed")) {
    // Any 64-bit integer; negative seeds wrap (the generator takes 64 bits).
    if (seed->is_number_unsigned()) {
      s.seed = seed->get<uint64_t>();
    } else if (seed->is_number_integer()) {
      s.seed = static_cast<uint64_t>(seed->get<int64_t>());
    } else {
      return BadRequest("'seed' must be an integer", "seed");
    }
    out->has_seed = true;
  }

  if (auto e = ParseStop(body, limits, out)) return e;
  if (auto e = ParseTokenIdList(body, "stop_token_ids", limits.vocab_size, &out->stop_token_ids)) return e;
  if (auto e = Bool(body, "ignore_eos", &out->ignore_eos)) return e;
  int64_t priority = 0;
  if (auto e = Int(body, "priority", -kI32, kI32, &priority)) return e;
  out->priority = static_cast<int32_t>(priority);
  return ParseStructured(body, out);
}

}  // namespace deepinfer::server::fields

namespace deepinfer::server {

bool JsonNestsDeeperThan(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        in_string = false;
      }
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > limit) return true;
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace deepinfer::server
