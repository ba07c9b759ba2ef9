// main() of every GoogleTest binary (cmake/deepinfer_test.cmake): applies
// the backend's settings from the environment once, as the tools' entry
// points do, so DEEPINFER_ISA=scalar ctest runs every test on the reference
// kernels.
#include <gtest/gtest.h>

#include "backend/cpu/backend_config.h"

int main(int argc, char** argv) {
  deepinfer::cpu::ApplyBackendConfig(deepinfer::cpu::BackendConfigFromEnv());
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
