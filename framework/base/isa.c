/* The CPU's vector level, read once (isa.h). */
#include "framework/base/isa.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const char *const level_names[] = {"generic", "avx2", "avx512"};

static _Atomic int native_level = -1, chosen_level = -1;

rill_cpu_isa_level rill_cpu_isa_level_native(void) {
  int l = atomic_load_explicit(&native_level, memory_order_relaxed);
  if (l >= 0) return (rill_cpu_isa_level)l;
  l = RILL_CPU_ISA_GENERIC;
#if RILL_X86_SIMD
  /* libgcc's (and compiler-rt's) cpuid reader: it also checks XGETBV, so a level is
   * reported only when the OS saves its registers. */
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    l = RILL_CPU_ISA_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
      l = RILL_CPU_ISA_AVX512;
  }
#endif
  atomic_store_explicit(&native_level, l, memory_order_relaxed);
  return (rill_cpu_isa_level)l;
}

/* RILL_CPU_ISA caps the level; an unknown value is ignored (the native level runs). */
static int env_cap(void) {
  const char *v = getenv("RILL_CPU_ISA");
  if (!v || !*v) return RILL_CPU_ISA_AVX512;
  for (int i = 0; i <= RILL_CPU_ISA_AVX512; i++)
    if (strcmp(v, level_names[i]) == 0) return i;
  if (strcmp(v, "baseline") == 0) return RILL_CPU_ISA_GENERIC;
  return RILL_CPU_ISA_AVX512;
}

rill_cpu_isa_level rill_cpu_isa_level_get(void) {
  int l = atomic_load_explicit(&chosen_level, memory_order_relaxed);
  if (l >= 0) return (rill_cpu_isa_level)l;
  l = (int)rill_cpu_isa_level_native();
  int cap = env_cap();
  if (cap < l) l = cap;
  atomic_store_explicit(&chosen_level, l, memory_order_relaxed);
  return (rill_cpu_isa_level)l;
}

void rill_cpu_isa_level_set(rill_cpu_isa_level level) {
  int native = (int)rill_cpu_isa_level_native();
  atomic_store_explicit(&chosen_level, (int)level < native ? (int)level : native,
                        memory_order_relaxed);
}

const char *rill_cpu_isa_level_name(rill_cpu_isa_level level) {
  return (unsigned)level <= RILL_CPU_ISA_AVX512 ? level_names[level] : "?";
}

static _Atomic int vnni = -1;

bool rill_cpu_avx512_vnni(void) {
  if (rill_cpu_isa_level_get() < RILL_CPU_ISA_AVX512) return false;
  int v = atomic_load_explicit(&vnni, memory_order_relaxed);
  if (v < 0) {
    v = 0;
#if RILL_X86_SIMD
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx512vnni") ? 1 : 0;
#endif
    atomic_store_explicit(&vnni, v, memory_order_relaxed);
  }
  return v == 1;
}
