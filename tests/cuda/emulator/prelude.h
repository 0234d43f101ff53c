/* Included first in every device file of the emulated CUDA backend (doc/design/cuda.md,
 * "Tests"): the device code compiled as host C++. rewrite_launches.py puts EMU_LAUNCH in
 * place of each kernel<<<grid, threads, shared, stream>>>(args) call. A launch runs the
 * grid's blocks in turn; a block runs as many threads as the launch asks for, each a
 * fiber (ucontext) on one OS thread, with threadIdx and blockDim as CUDA sets them.
 * __syncthreads() is a barrier: the block's fibers run round by round, each up to its
 * next barrier (or its end), so __shared__ memory (static here: one block runs at a
 * time) holds what every thread wrote before the barrier, as on a device. Threads
 * interleave only at barriers, so a race between them (a missing barrier) goes unseen.
 * The executor launches from several OS threads; launches run one at a time. */
#ifndef RILL_TESTS_CUDA_EMULATOR_PRELUDE_H
#define RILL_TESTS_CUDA_EMULATOR_PRELUDE_H

#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>

struct emu_dim {
  unsigned x, y, z;
};

namespace emu {

inline emu_dim threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};

constexpr unsigned kMaxThreads = 1024;
constexpr size_t kStack = 256 * 1024;

struct fiber {
  ucontext_t ctx;
  bool done;
};

inline ucontext_t scheduler;
inline fiber *fibers;
inline char *stacks;
inline unsigned current;
inline const std::function<void()> *body;

inline void entry() {
  (*body)();
  fibers[current].done = true;
  swapcontext(&fibers[current].ctx, &scheduler);
}

/* Back to the scheduler until every thread of the block has reached a barrier. */
inline void barrier() { swapcontext(&fibers[current].ctx, &scheduler); }

/* One block of `threads` fibers running `fn`, round by round between barriers. */
inline void run_block(unsigned threads, const std::function<void()> &fn) {
  if (threads == 0 || threads > kMaxThreads) {
    fprintf(stderr, "emulated launch: %u threads a block (at most %u)\n", threads, kMaxThreads);
    abort();
  }
  if (!fibers) {
    fibers = static_cast<fiber *>(calloc(kMaxThreads, sizeof *fibers));
    stacks = static_cast<char *>(malloc(kMaxThreads * kStack));
    if (!fibers || !stacks) abort();
  }
  body = &fn;
  blockDim = {threads, 1, 1};
  for (unsigned t = 0; t < threads; t++) {
    getcontext(&fibers[t].ctx);
    fibers[t].ctx.uc_stack.ss_sp = stacks + (size_t)t * kStack;
    fibers[t].ctx.uc_stack.ss_size = kStack;
    fibers[t].ctx.uc_link = nullptr;
    fibers[t].done = false;
    makecontext(&fibers[t].ctx, entry, 0);
  }
  for (bool running = true; running;) {
    running = false;
    for (unsigned t = 0; t < threads; t++) {
      if (fibers[t].done) continue;
      current = t;
      threadIdx = {t, 0, 0};
      swapcontext(&scheduler, &fibers[t].ctx);
      running |= !fibers[t].done;
    }
  }
  threadIdx = {0, 0, 0};
}

inline std::mutex launching;

}  // namespace emu

/* The device memory is accessible only while the device works on it (runtime.c). */
extern "C" void rill_emu_device_open(void);
extern "C" void rill_emu_device_close(void);

namespace emu {

inline void launch(unsigned grid, unsigned threads, const std::function<void()> &fn) {
  std::lock_guard<std::mutex> one_at_a_time(launching);
  rill_emu_device_open();
  gridDim = {grid, 1, 1};
  for (unsigned b = 0; b < grid; b++) {
    blockIdx = {b, 0, 0};
    run_block(threads, fn);
  }
  blockIdx = {0, 0, 0};
  gridDim = {1, 1, 1};
  blockDim = {1, 1, 1};
  rill_emu_device_close();
}

}  // namespace emu

using emu::blockDim;
using emu::blockIdx;
using emu::gridDim;
using emu::threadIdx;

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __syncthreads() emu::barrier()

#define EMU_LAUNCH(grid, threads, stream, ...)                           \
  do {                                                                   \
    (void)(stream); /* every stream is synchronous */                    \
    emu::launch((unsigned)(grid), (unsigned)(threads), [&] { __VA_ARGS__; }); \
  } while (0)

template <typename T>
inline T atomicMin(T *p, T v) {
  T old = *p;
  if (v < old) *p = v;
  return old;
}
template <typename T>
inline T atomicAdd(T *p, T v) {
  T old = *p;
  *p = old + v;
  return old;
}

using std::isfinite;
using std::isinf;
using std::isnan;

#endif
