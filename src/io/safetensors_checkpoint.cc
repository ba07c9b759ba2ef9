// SafetensorsCheckpoint: one or many safetensors files seen as one tensor set.
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "io/safetensors.h"

namespace deepinfer {
namespace {

bool IsRegularFile(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A shard name from an index must be a plain file name inside the directory.
bool IsPlainFileName(const std::string& f) {
  return !f.empty() && f.find('/') == std::string::npos && f != "." && f != "..";
}

}  // namespace

StatusOr<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::Open(const std::string& dir) {
  auto ckpt = std::make_unique<SafetensorsCheckpoint>();
  auto add_file = [&](std::unique_ptr<SafetensorsFile> f) -> Status {
    for (const TensorView& t : f->tensors()) {
      if (!ckpt->by_name_.emplace(t.name, &t).second) {
        return DataLoss(f->path() + ": tensor '" + t.name + "' also appears in another shard");
      }
    }
    ckpt->files_.push_back(std::move(f));
    return Status::Ok();
  };

  if (IsRegularFile(dir)) {  // a single .safetensors file
    DI_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(dir));
    DI_RETURN_IF_ERROR(add_file(std::move(f)));
    return ckpt;
  }
  const std::string index_path = dir + "/model.safetensors.index.json";
  if (!IsRegularFile(index_path)) {
    const std::string single = dir + "/model.safetensors";
    if (!IsRegularFile(single)) {
      return NotFound(dir + ": no model.safetensors or model.safetensors.index.json");
    }
    DI_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(single));
    DI_RETURN_IF_ERROR(add_file(std::move(f)));
    return ckpt;
  }

  std::ifstream in(index_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return NotFound(index_path + ": cannot read");
  const auto index = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object()) return DataLoss(index_path + ": invalid JSON");
  auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object()) return DataLoss(index_path + ": missing object 'weight_map'");

  std::set<std::string> shards;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it.value().is_string() || !IsPlainFileName(it.value().get<std::string>())) {
      return DataLoss(index_path + ": weight_map['" + it.key() + "'] is not a file name in " + dir);
    }
    shards.insert(it.value().get<std::string>());
  }
  for (const std::string& shard : shards) {
    DI_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(dir + "/" + shard));
    DI_RETURN_IF_ERROR(add_file(std::move(f)));
  }
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    const std::string shard = it.value().get<std::string>();
    const TensorView* t = ckpt->FindTensor(it.key());
    if (t == nullptr) {
      return DataLoss(index_path + ": tensor '" + it.key() + "' is not in " + shard);
    }
  }
  return ckpt;
}

const TensorView* SafetensorsCheckpoint::FindTensor(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const TensorView*> SafetensorsCheckpoint::tensors() const {
  std::vector<const TensorView*> out;
  for (const auto& f : files_) {
    for (const TensorView& t : f->tensors()) out.push_back(&t);
  }
  return out;
}

}  // namespace deepinfer
