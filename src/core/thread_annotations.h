// Clang thread-safety annotations (-Wthread-safety). They state which mutex
// guards a member and which lock a function expects, and a clang build checks
// every access against them (CI builds with -Werror=thread-safety). Under GCC
// they expand to nothing. Use them with core/mutex.h: libstdc++'s std::mutex
// carries no annotations, so the analysis cannot see through it.
//
//   Mutex mu_;
//   int64_t steps_ GUARDED_BY(mu_);
//   void CommitLocked() REQUIRES(mu_);
//   void Submit() EXCLUDES(mu_);
#pragma once

#if defined(__clang__)
#define DI_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DI_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) DI_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY DI_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) DI_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) DI_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) DI_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) DI_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) DI_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define EXCLUDES(...) DI_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) DI_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS DI_THREAD_ANNOTATION(no_thread_safety_analysis)
