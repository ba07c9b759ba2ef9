// The architecture registry: every registered spec is found again by each of
// its names (ModelConfig::arch, HF class, HF model_type, GGUF
// general.architecture), so the config readers need no name compares.
#include "model/registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "io/gguf.h"
#include "model/config_loader.h"
#include "model/testing.h"

namespace deepinfer {
namespace {

TEST(Registry, NamesAreUniqueAndFoundAgain) {
  std::set<std::string> names, classes;
  for (const ArchitectureSpec* spec : RegisteredArchitectures()) {
    EXPECT_TRUE(names.insert(spec->name).second) << spec->name;
    EXPECT_TRUE(classes.insert(spec->hf_class).second) << spec->hf_class;
    EXPECT_NE(spec->gguf_name, nullptr) << spec->name;
    EXPECT_NE(spec->factory, nullptr) << spec->name;
    EXPECT_EQ(FindArchitectureByName(spec->name), spec);
    EXPECT_EQ(FindArchitectureByHfClass(spec->hf_class), spec);
  }
  EXPECT_EQ(FindArchitectureByName("gpt2"), nullptr);
  EXPECT_EQ(FindArchitectureByHfClass("GPT2LMHeadModel"), nullptr);
}

// A config.json with only the common keys; every architecture's hook fills
// the rest from its transformers defaults.
std::string MinimalHfConfig(const std::string& name_key, const std::string& name_value) {
  return "{\"" + name_key + "\": " + name_value +
         ", \"vocab_size\": 64, \"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
         " \"intermediate_size\": 128}";
}

TEST(Registry, HfClassAndModelTypeRoundTrip) {
  for (const ArchitectureSpec* spec : RegisteredArchitectures()) {
    for (const auto& [key, value] :
         {std::pair<std::string, std::string>{"architectures", "[\"" + std::string(spec->hf_class) + "\"]"},
          {"model_type", "\"" + std::string(spec->name) + "\""}}) {
      const StatusOr<ModelConfig> c = ModelConfigFromHfJson(MinimalHfConfig(key, value));
      ASSERT_TRUE(c.ok()) << spec->name << " via " << key << ": " << c.status().ToString();
      EXPECT_EQ(c->arch, spec->name) << key;
      EXPECT_EQ(c->attention_bias, spec->qkv_bias) << spec->name;
      EXPECT_EQ(c->qk_norm, spec->qk_norm) << spec->name;
    }
  }
}

// GGUF: the spec's gguf_name (with what its claim looks for) leads back to
// it, or to the sibling of the same GGUF name whose GGUF hook then decides
// (deepseek2 -> DeepSeek-V2 or V3).
TEST(Registry, GgufNameRoundTrips) {
  for (const ArchitectureSpec* spec : RegisteredArchitectures()) {
    GgufWriter w;
    const std::string prefix = std::string(spec->gguf_name) + ".";
    w.SetString("general.architecture", spec->gguf_name);
    if (spec->claims_gguf != nullptr) w.SetU32(prefix + "expert_count", 4);
    const std::string path =
        testing::PerTestPath(DI_BINARY_DIR, "registry_test", std::string(spec->name) + ".gguf");
    ASSERT_TRUE(w.Write(path).ok());
    auto gguf = GgufFile::Open(path);
    ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
    const ArchitectureSpec* found = FindArchitectureForGguf(**gguf, spec->gguf_name);
    ASSERT_NE(found, nullptr) << spec->name;
    if (found != spec) {
      EXPECT_STREQ(found->gguf_name, spec->gguf_name) << spec->name;
      EXPECT_NE(spec->read_gguf, nullptr) << spec->name << " is unreachable from GGUF";
      EXPECT_EQ(found->read_gguf, spec->read_gguf) << spec->name;
    }
  }
}

}  // namespace
}  // namespace deepinfer
