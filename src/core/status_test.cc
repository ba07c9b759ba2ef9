#include "core/status.h"

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  DI_ASSIGN_OR_RETURN(int h, Half(x));
  DI_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, PropagatesFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "odd: 3");
  EXPECT_EQ(r.status().WithContext("f.gguf").message(), "f.gguf: odd: 3");
}

}  // namespace
}  // namespace deepinfer
