/* framework/base/isa.h: the CPU's vector level, its cap, its names. */
#include <criterion/criterion.h>
#include <string.h>

#include "framework/base/isa.h"
#include "rill.h"

static void restore_level(void) { rill_cpu_isa_level_set(rill_cpu_isa_level_native()); }

Test(isa, the_chosen_level_never_exceeds_the_cpus) {
  rill_cpu_isa_level native = rill_cpu_isa_level_native();
  cr_expect(rill_cpu_isa_level_get() <= native);
  const char *name = rill_cpu_isa();
  cr_expect(strcmp(name, "generic") == 0 || strcmp(name, "avx2") == 0 || strcmp(name, "avx512") == 0, "%s",
            name);
  cr_expect_str_eq(name, rill_cpu_isa_level_name(rill_cpu_isa_level_get()));
#if !RILL_X86_SIMD
  cr_expect_eq(native, RILL_CPU_ISA_GENERIC, "a build without x86 vector paths reports only generic");
#endif
}

Test(isa, a_cap_holds_and_is_capped_by_the_cpu, .fini = restore_level) {
  rill_cpu_isa_level_set(RILL_CPU_ISA_GENERIC);
  cr_expect_eq(rill_cpu_isa_level_get(), RILL_CPU_ISA_GENERIC);
  cr_expect_not(rill_cpu_avx2(), "capped at generic, the AVX2 paths must not run");
  cr_expect_str_eq(rill_cpu_isa(), "generic");
  rill_cpu_isa_level_set(RILL_CPU_ISA_AVX512);
  cr_expect_eq(rill_cpu_isa_level_get(), rill_cpu_isa_level_native(), "a level above the CPU's is capped");
  cr_expect_eq(rill_cpu_avx2(), rill_cpu_isa_level_native() >= RILL_CPU_ISA_AVX2);
}

Test(isa, names) {
  cr_expect_str_eq(rill_cpu_isa_level_name(RILL_CPU_ISA_GENERIC), "generic");
  cr_expect_str_eq(rill_cpu_isa_level_name(RILL_CPU_ISA_AVX2), "avx2");
  cr_expect_str_eq(rill_cpu_isa_level_name(RILL_CPU_ISA_AVX512), "avx512");
  cr_expect_str_eq(rill_cpu_isa_level_name((rill_cpu_isa_level)7), "?");
}
