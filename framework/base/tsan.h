/* Hand-offs ThreadSanitizer cannot see. A library that is not instrumented (libzmq)
 * passes memory between threads through its own lock-free queues; where rill gives it
 * an object on one thread and gets it back in a callback on another, RILL_TSAN_RELEASE
 * before the hand-off and RILL_TSAN_ACQUIRE in the callback tell TSan about that
 * ordering, so rill's code on both sides stays checked instead of suppressed. Both are
 * nothing in other builds. */
#ifndef RILL_FRAMEWORK_BASE_TSAN_H
#define RILL_FRAMEWORK_BASE_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define RILL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RILL_TSAN 1
#endif
#endif

#ifdef RILL_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define RILL_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define RILL_TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define RILL_TSAN_ACQUIRE(p) ((void)(p))
#define RILL_TSAN_RELEASE(p) ((void)(p))
#endif

#endif
