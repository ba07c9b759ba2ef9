// Typed access to config.json keys for the HF config reader (config_hf.cc)
// and the architectures' config hooks (model/archs/). Every error names the
// key: NotFound when a required key is missing, InvalidArgument when a key
// has the wrong JSON type. A key whose value is null counts as absent.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/status.h"

namespace deepinfer::hf {

using Json = nlohmann::json;

bool Present(const Json& j, const char* key);
StatusOr<int64_t> GetInt(const Json& j, const char* key);
StatusOr<int64_t> GetIntOr(const Json& j, const char* key, int64_t def);
StatusOr<double> GetFloatOr(const Json& j, const char* key, double def);
StatusOr<bool> GetBoolOr(const Json& j, const char* key, bool def);

}  // namespace deepinfer::hf
