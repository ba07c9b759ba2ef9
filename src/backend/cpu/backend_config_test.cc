// BackendConfigFromEnv: each DEEPINFER_* variable and its default.
#include "backend/cpu/backend_config.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace deepinfer::cpu {
namespace {

// Sets (or, for nullptr, unsets) one variable for the test's scope; unset
// again afterwards (the tests' main has applied the environment already).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(BackendConfigTest, DefaultsWhenUnset) {
  ScopedEnv isa("DEEPINFER_ISA", nullptr), amx("DEEPINFER_AMX", nullptr),
      huge("DEEPINFER_HUGE_PAGES", nullptr);
  const BackendConfig c = BackendConfigFromEnv();
  EXPECT_FALSE(c.isa.has_value());
  EXPECT_TRUE(c.amx);
  EXPECT_TRUE(c.huge_pages);
}

TEST(BackendConfigTest, ZeroTurnsSwitchesOff) {
  ScopedEnv amx("DEEPINFER_AMX", "0"), huge("DEEPINFER_HUGE_PAGES", "0");
  const BackendConfig c = BackendConfigFromEnv();
  EXPECT_FALSE(c.amx);
  EXPECT_FALSE(c.huge_pages);
  ScopedEnv amx_on("DEEPINFER_AMX", "1"), huge_on("DEEPINFER_HUGE_PAGES", "1");
  EXPECT_TRUE(BackendConfigFromEnv().amx);
  EXPECT_TRUE(BackendConfigFromEnv().huge_pages);
}

TEST(BackendConfigTest, IsaByNameUnknownIgnored) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    ScopedEnv env("DEEPINFER_ISA", IsaName(isa));
    EXPECT_EQ(BackendConfigFromEnv().isa, isa);
  }
  ScopedEnv env("DEEPINFER_ISA", "sse9");
  EXPECT_FALSE(BackendConfigFromEnv().isa.has_value());
}

TEST(BackendConfigTest, ApplyKeepsTheDecidedLevel) {
  // The tests' main applied the environment's config; re-applying an
  // equivalent one is allowed after kernels ran.
  const BackendConfig c = ActiveBackendConfig();
  (void)ActiveIsa();
  ApplyBackendConfig(c);
  EXPECT_EQ(ActiveIsa(), ResolveIsa(c.isa));
}

}  // namespace
}  // namespace deepinfer::cpu
