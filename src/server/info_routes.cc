// GET /version and GET /v1/models/{id}; the model card /v1/models lists.
#include <nlohmann/json.hpp>

#include "core/version.h"
#include "server/api_service.h"
#include "server/response_json.h"

namespace deepinfer::server {
namespace {

using json = nlohmann::json;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "org%2Fname" -> "org/name": clients that escape the id's slash reach the
// same model as those that do not. A '%' not followed by two hex digits is
// kept as it is.
std::string PercentDecoded(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

void ApiService::HandleVersion(const std::shared_ptr<ResponseWriter>& writer) {
  writer->SendResponse(200, "application/json",
                       Dump(json{{"version", Version()}, {"git_revision", GitRevision()}}));
}

// OpenAI's retrieve-model route; an id this server does not serve is 404
// in the error shape (`code: "model_not_found"`, `param: "model"`).
void ApiService::HandleModel(const std::string& raw_id, const std::shared_ptr<ResponseWriter>& writer) {
  const std::string id = PercentDecoded(raw_id);
  if (id != options_.served_model_name) {
    ApiError e;
    e.http_status = 404;
    e.message =
        "the model '" + id + "' does not exist; this server serves '" + options_.served_model_name + "'";
    e.param = "model";
    e.code = "model_not_found";
    return writer->SendResponse(404, "application/json", e.ToJson());
  }
  writer->SendResponse(200, "application/json", Dump(ModelCard()));
}

nlohmann::json ApiService::ModelCard() const {
  return json{{"id", options_.served_model_name},
              {"object", "model"},
              {"created", 0},
              {"owned_by", "deepinfer"},
              {"root", options_.served_model_name},
              {"max_model_len", engine_.config().scheduler.max_model_len},
              {"vocab_size", engine_.model_config().vocab_size}};
}

}  // namespace deepinfer::server
