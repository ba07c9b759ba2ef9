// ApiService over the real Engine on stories260K (no sockets): behaviour that
// depends on what the engine and the grammar do together, which the
// FakeEngine cannot show.
#include <gtest/gtest.h>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "server/api_service.h"
#include "server/capturing_writer_test_util.h"

namespace deepinfer::server {
namespace {

using testing::CapturingWriter;

class ApiServiceEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LoadOptions load;
    load.num_threads = 2;
    auto loaded = LoadModel(std::string(DI_SHARED_DIR) + "/models/gguf/stories260K.gguf", load);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    EngineConfig config;
    config.scheduler.max_model_len = 256;
    config.kv_cache_memory_bytes = 8 << 20;
    auto engine = Engine::Create(std::move(*loaded), config);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    service_ = std::make_unique<ApiService>(*engine_, ServiceOptions{});
    service_->SetReady(true);
  }
  void TearDown() override {
    if (engine_) engine_->Shutdown(/*drain=*/false);
  }

  std::shared_ptr<CapturingWriter> Post(const std::string& body) {
    auto w = std::make_shared<CapturingWriter>();
    service_->Handle({"POST", "/v1/completions", "", body}, w);
    EXPECT_TRUE(w->Wait()) << body;
    return w;
  }

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ApiService> service_;
};

// Issue 19 (8): with ignore_eos, a constrained request whose grammar is
// complete finishes with "stop" (it used to fail with 500 "the constraint
// allows no token"), streaming or not.
TEST_F(ApiServiceEngineTest, CompleteGrammarWithIgnoreEosStops) {
  for (const char* constraint : {R"("guided_choice": ["a"])", R"("guided_regex": "ab?c")"}) {
    auto w = Post(std::string(R"({"prompt": "x", "max_tokens": 5, "ignore_eos": true, "temperature": 0, )") +
                  constraint + "}");
    ASSERT_EQ(w->status(), 200) << w->body();
    const nlohmann::json response = w->json();
    const nlohmann::json& choice = response["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "stop") << w->body();
    const std::string text = choice["text"];
    EXPECT_TRUE(text == "a" || text == "ac" || text == "abc") << text;

    auto s = Post(std::string(R"({"prompt": "x", "max_tokens": 5, "ignore_eos": true, "stream": true, )") +
                  constraint + "}");
    EXPECT_EQ(s->status(), 200);
    EXPECT_EQ(s->body().find("\"error\""), std::string::npos) << s->body();
    EXPECT_NE(s->body().find("\"finish_reason\":\"stop\""), std::string::npos) << s->body();
    EXPECT_NE(s->body().find("data: [DONE]"), std::string::npos) << s->body();
  }
}

}  // namespace
}  // namespace deepinfer::server
