// Whether this build runs under AddressSanitizer or ThreadSanitizer (GCC
// defines __SANITIZE_*; clang answers __has_feature). Tests use it to skip
// cases the sanitizer runtime cannot live under (address-space or descriptor
// limits) and to widen wall-clock bounds of whole seconds.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DI_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DI_UNDER_SANITIZER 1
#endif
#endif
#ifndef DI_UNDER_SANITIZER
#define DI_UNDER_SANITIZER 0
#endif

namespace deepinfer {

inline constexpr bool kUnderSanitizer = DI_UNDER_SANITIZER != 0;

}  // namespace deepinfer
