#include "framework/base/thread.h"

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

void rill_thread_background_priority(void) {
#ifdef __linux__
  (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), RILL_THREAD_BACKGROUND_NICE);
#endif
}
