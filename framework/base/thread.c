#include "framework/base/thread.h"

#ifdef __linux__
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

void rill_thread_background_priority(void) {
#ifdef __linux__
  (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), RILL_THREAD_BACKGROUND_NICE);
#endif
}

void rill_thread_set_name(const char *name) {
#ifdef __linux__
  (void)prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
#else
  (void)name;
#endif
}
