/* See blas_threads.h. */
#include "kernels/cpu/blas_threads.h"

#include <cblas.h>
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int depth, saved;

void rill_blas_single_begin(void) {
  pthread_mutex_lock(&lock);
  if (depth++ == 0) {
    saved = openblas_get_num_threads();
    if (saved != 1) openblas_set_num_threads(1);
  }
  pthread_mutex_unlock(&lock);
}

void rill_blas_single_end(void) {
  pthread_mutex_lock(&lock);
  if (--depth == 0 && saved != 1) openblas_set_num_threads(saved);
  pthread_mutex_unlock(&lock);
}
