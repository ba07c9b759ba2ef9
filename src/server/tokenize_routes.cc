// POST /tokenize and POST /detokenize, in vLLM's shapes:
//   /tokenize {"prompt": TEXT, "add_special_tokens": true, "return_token_strs": false}
//          or {"messages": [...], ...chat fields, "add_special_tokens": ...}
//     -> {"count", "max_model_len", "tokens", "token_strs"} (+ "prompt": the rendered chat text)
//   /detokenize {"tokens": [ids]} -> {"prompt": TEXT}
// The messages form is parsed and rendered exactly as /v1/chat/completions
// does (ParseChatRequest, RenderChat), so the tokens are the ones a chat
// request would submit. add_special_tokens, when absent, follows the
// generation routes too: BOS for a prompt; for messages, BOS only where the
// rendered text does not begin with it (vLLM's chat default is false; its
// templates write BOS themselves, which the same rule keeps).
// ParseBody and RenderChat (the side routes' shares of the generation path)
// are here too.
// Detokenize renders control tokens as their text (HF decode's default,
// skip_special_tokens=False, as vLLM's /detokenize).
#include <nlohmann/json.hpp>

#include "server/api_service.h"
#include "server/request_fields.h"
#include "server/response_json.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::server {
namespace {

using json = nlohmann::json;

void Send(ResponseWriter& writer, const ApiError& e) {
  writer.SendResponse(e.http_status, "application/json", e.ToJson());
}

}  // namespace

std::optional<ApiError> ApiService::ParseBody(const std::string& body, json* out) const {
  if (JsonNestsDeeperThan(body, kMaxJsonDepth)) {
    return BadRequest("the request body nests deeper than " + std::to_string(kMaxJsonDepth));
  }
  *out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) return BadRequest("the request body is not valid JSON");
  return std::nullopt;
}

StatusOr<std::string> ApiService::RenderChat(const ParsedRequest& req) const {
  return RenderChatPrompt(options_.chat_renderer, req);
}

void ApiService::HandleTokenize(const std::string& body, const std::shared_ptr<ResponseWriter>& writer) {
  json checked;
  if (std::optional<ApiError> bad = ParseBody(body, &checked)) return Send(*writer, *bad);
  // The request fields' reader (request_fields.h) takes bodies in key order.
  const fields::json j = fields::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Send(*writer, BadRequest("the request body must be a JSON object"));
  const bool has_prompt = j.contains("prompt") && !j["prompt"].is_null();
  const bool has_messages = j.contains("messages") && !j["messages"].is_null();
  if (has_prompt == has_messages) {
    return Send(*writer,
                BadRequest("give exactly one of 'prompt' or 'messages'", has_prompt ? "messages" : "prompt"));
  }
  std::optional<bool> add_special;
  if (const fields::json* v = fields::Find(j, "add_special_tokens")) {
    if (!v->is_boolean())
      return Send(*writer, BadRequest("'add_special_tokens' must be a boolean", "add_special_tokens"));
    add_special = v->get<bool>();
  }
  bool return_strs = false;
  if (auto e = fields::Bool(j, "return_token_strs", &return_strs)) return Send(*writer, *e);
  if (const fields::json* model = fields::Find(j, "model")) {
    if (!model->is_string() || model->get<std::string>() != options_.served_model_name) {
      ApiError e;
      e.http_status = 404;
      e.message = "the model does not exist; this server serves '" + options_.served_model_name + "'";
      e.param = "model";
      e.code = "model_not_found";
      return Send(*writer, e);
    }
  }
  const Tokenizer& tok = engine_.tokenizer();
  std::vector<int32_t> ids;
  json out;
  if (has_prompt) {
    if (!j["prompt"].is_string()) return Send(*writer, BadRequest("'prompt' must be a string", "prompt"));
    ids = tok.Encode(j["prompt"].get<std::string>(), add_special.value_or(true), /*parse_special=*/true);
  } else {
    // The chat parser sees the body without this route's own fields, in
    // its key order (tool schemas render as sent).
    fields::json chat = j;
    chat.erase("add_special_tokens");
    chat.erase("return_token_strs");
    RequestLimits limits;
    limits.vocab_size = engine_.model_config().vocab_size;
    ParsedRequest req;
    if (std::optional<ApiError> e = ParseChatRequest(chat, limits, &req)) return Send(*writer, *e);
    StatusOr<std::string> text = RenderChat(req);
    if (!text.ok()) return Send(*writer, RequestContentError(text.status(), "messages"));
    if (add_special) {
      ids = tok.Encode(*text, *add_special, /*parse_special=*/true);
    } else {
      StatusOr<std::vector<int32_t>> chat_ids = TokenizeText(*text, /*chat=*/true);
      if (!chat_ids.ok()) return Send(*writer, RequestContentError(chat_ids.status(), "messages"));
      ids = std::move(*chat_ids);
    }
    out["prompt"] = *text;
  }
  out["count"] = ids.size();
  out["max_model_len"] = engine_.config().scheduler.max_model_len;
  out["tokens"] = ids;
  if (return_strs) {
    json strs = json::array();
    for (int32_t id : ids) strs.push_back(tok.data().pieces[static_cast<size_t>(id)]);
    out["token_strs"] = std::move(strs);
  } else {
    out["token_strs"] = nullptr;
  }
  writer->SendResponse(200, "application/json", Dump(out));
}

void ApiService::HandleDetokenize(const std::string& body, const std::shared_ptr<ResponseWriter>& writer) {
  json checked;
  if (std::optional<ApiError> bad = ParseBody(body, &checked)) return Send(*writer, *bad);
  // The request fields' reader (request_fields.h) takes bodies in key order.
  const fields::json j = fields::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Send(*writer, BadRequest("the request body must be a JSON object"));
  const fields::json* tokens = fields::Find(j, "tokens");
  if (tokens == nullptr || !tokens->is_array()) {
    return Send(*writer, BadRequest("'tokens' must be a list of token ids", "tokens"));
  }
  const int64_t vocab = engine_.tokenizer().vocab_size();
  std::vector<int32_t> ids;
  ids.reserve(tokens->size());
  for (const fields::json& t : *tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab) {
      return Send(*writer,
                  BadRequest("'tokens' must hold token ids in [0, " + std::to_string(vocab) + ")", "tokens"));
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  writer->SendResponse(200, "application/json",
                       Dump(json{{"prompt", engine_.tokenizer().Decode(ids, /*render_special=*/true)}}));
}

}  // namespace deepinfer::server
