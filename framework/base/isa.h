/* The CPU's vector paths: which this build compiled and which this CPU runs.
 *
 * rill builds for the baseline of its target (x86-64 without AVX, or arm64), so one
 * binary runs on every CPU. The hot kernels also have AVX2+FMA versions, compiled into
 * the same objects between RILL_AVX2_BEGIN and RILL_AVX2_END (GCC's target pragma,
 * clang's attribute push), and a kernel takes them only when rill_cpu_avx2() says the
 * CPU runs them. The choice is made once per process from cpuid (and the OS's support
 * for the AVX state); RILL_CPU_ISA=generic in the environment caps it, so the
 * baseline paths are tested on any machine (doc/design/kernels.md).
 *
 * Inside a region, GCC defines __AVX2__ and __FMA__ (clang does not): code there tests
 * RILL_X86_SIMD, never those macros. RILL_AVX512_BEGIN / END is the same for AVX-512
 * (F, BW, DQ, VL), behind rill_cpu_avx512(); RILL_AVX512VNNI_BEGIN / END adds VNNI
 * (vpdpbusd), behind rill_cpu_avx512_vnni(), which is not a level of its own: it is the
 * avx512 level on a CPU that has VNNI. A function inside a region may call baseline
 * functions; a baseline function calls a region's functions only behind
 * rill_cpu_avx2(), and never one marked always_inline. */
#ifndef RILL_FRAMEWORK_BASE_ISA_H
#define RILL_FRAMEWORK_BASE_ISA_H

#include <stdbool.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define RILL_X86_SIMD 1
#include <immintrin.h>
#if defined(__clang__)
#define RILL_AVX2_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx2,fma\"))), apply_to = function)")
#define RILL_AVX2_END _Pragma("clang attribute pop")
#define RILL_AVX512_BEGIN                                                                  \
  _Pragma("clang attribute push(__attribute__((target(\"avx512f,avx512bw,avx512dq,avx512vl,avx2,fma\"))), \
          apply_to = function)")
#define RILL_AVX512_END _Pragma("clang attribute pop")
#define RILL_AVX512VNNI_BEGIN                                                              \
  _Pragma("clang attribute push(__attribute__((target(\"avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma\"))), \
          apply_to = function)")
#define RILL_AVX512VNNI_END _Pragma("clang attribute pop")
#else
#define RILL_AVX2_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma\")")
#define RILL_AVX2_END _Pragma("GCC pop_options")
#define RILL_AVX512_BEGIN \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,avx512bw,avx512dq,avx512vl,avx2,fma\")")
#define RILL_AVX512_END _Pragma("GCC pop_options")
#define RILL_AVX512VNNI_BEGIN \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma\")")
#define RILL_AVX512VNNI_END _Pragma("GCC pop_options")
#endif
#else
#define RILL_X86_SIMD 0
#endif

typedef enum rill_cpu_isa_level {
  RILL_CPU_ISA_GENERIC = 0, /* the build's baseline: scalar code and what the compiler vectorises */
  RILL_CPU_ISA_AVX2 = 1,    /* AVX2 + FMA (x86-64-v3 class) */
  RILL_CPU_ISA_AVX512 = 2,  /* AVX-512 F/BW/DQ/VL on top (x86-64-v4 class) */
} rill_cpu_isa_level;

/* The level the kernels run at: the CPU's, capped by RILL_CPU_ISA when set. */
rill_cpu_isa_level rill_cpu_isa_level_get(void);
/* The best level the CPU itself supports, whatever the environment says. */
rill_cpu_isa_level rill_cpu_isa_level_native(void);
/* "generic", "avx2" or "avx512". */
const char *rill_cpu_isa_level_name(rill_cpu_isa_level level);

/* Overrides the level for this process (tests and benchmarks; capped by the CPU's). */
void rill_cpu_isa_level_set(rill_cpu_isa_level level);

static inline bool rill_cpu_avx512(void) {
#if RILL_X86_SIMD
  return rill_cpu_isa_level_get() >= RILL_CPU_ISA_AVX512;
#else
  return false;
#endif
}

/* AVX-512 VNNI, where the CPU has it and the level is avx512. */
bool rill_cpu_avx512_vnni(void);

static inline bool rill_cpu_avx2(void) {
#if RILL_X86_SIMD
  return rill_cpu_isa_level_get() >= RILL_CPU_ISA_AVX2;
#else
  return false;
#endif
}

#endif
