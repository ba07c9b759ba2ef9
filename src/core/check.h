// DI_CHECK: invariants that, when broken, mean a bug in deepinfer (not bad
// input). Bad input is reported through Status, never through DI_CHECK.
#pragma once

#include <cstdio>
#include <cstdlib>

#define DI_CHECK(cond)                                                              \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

#define DI_CHECK_MSG(cond, msg)                                                               \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, msg); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)
