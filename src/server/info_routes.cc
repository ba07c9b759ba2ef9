// GET /version, GET /v1/models and GET /v1/models/{id}.
#include <nlohmann/json.hpp>

#include "core/version.h"
#include "server/api_service.h"
#include "server/response_json.h"

namespace deepinfer::server {
namespace {

using json = nlohmann::json;

}  // namespace

void ApiService::HandleVersion(const std::shared_ptr<ResponseWriter>& writer) {
  writer->SendResponse(200, "application/json", Dump(json{{"version", Version()}, {"git_revision", GitRevision()}}));
}

void ApiService::HandleModels(const std::shared_ptr<ResponseWriter>& writer) {
  writer->SendResponse(200, "application/json",
                       Dump(json{{"object", "list"}, {"data", json::array({ModelCard()})}}));
}

// OpenAI's retrieve-model route; an id this server does not serve is 404
// in the error shape (`code: "model_not_found"`, `param: "model"`).
void ApiService::HandleModel(const std::string& id, const std::shared_ptr<ResponseWriter>& writer) {
  if (id != options_.served_model_name) {
    ApiError e;
    e.http_status = 404;
    e.message = "the model '" + id + "' does not exist; this server serves '" + options_.served_model_name + "'";
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
