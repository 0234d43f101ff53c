/* Predictor clones on several threads at once: one predictor loads a real model (with
 * every pass and the memory plan), each thread runs its own clone many times (on the
 * parallel schedule for the first model, the sequential one for the second). The clones share the program and the weights; each
 * answer must equal the single-threaded one bit for bit. ThreadSanitizer checks the
 * sharing: weights are only read, and the persistable variables an op writes (the
 * batch_norm statistics the folding could not remove) are private to each clone. The
 * third case leaves the first run to the clones, so they race to pack the constant
 * weights (one claims each, the others multiply unpacked meanwhile); its reference comes
 * from a predictor whose weights stay mutable (nothing packed). */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "framework/exec/pool.h"
#include "framework/inference/predictor.h"
#include "framework/io/npy.h"
#include "rill.h"

enum { THREADS = 4, ROUNDS = 12, MAXOUT = 64 };

#define MODELS RILL_SHARED_DIR "/models/"

static rill_predictor *base;
static rill_tensor *input;
static const char *input_name;
static float want[MAXOUT];
static int64_t nwant;

typedef struct worker {
  rill_predictor *p;
  int errors, mismatches;
} worker;

static int run_once(rill_predictor *p, float *out, int64_t *n) {
  rill_tensor *y = NULL;
  rill_status *st = rill_predictor_run(p, &input_name, &input, 1, &y);
  if (st) {
    fprintf(stderr, "run: %s\n", rill_status_message(st));
    rill_status_destroy(st);
    return 1;
  }
  *n = rill_tensor_numel(y);
  if (*n > MAXOUT) *n = MAXOUT;
  memcpy(out, rill_tensor_data(y), (size_t)*n * sizeof(float));
  rill_tensor_destroy(y);
  return 0;
}

static void *work(void *arg) {
  worker *w = arg;
  for (int r = 0; r < ROUNDS; r++) {
    float got[MAXOUT];
    int64_t n = 0;
    if (run_once(w->p, got, &n)) {
      w->errors++;
      continue;
    }
    if (n != nwant || memcmp(got, want, (size_t)n * sizeof(float)) != 0) w->mismatches++;
  }
  return NULL;
}

static rill_status *open_model(const char *path, rill_schedule schedule, bool constant, rill_predictor **out) {
  rill_predictor_config *c = NULL;
  rill_status *st = rill_predictor_config_create(path, &c);
  if (!st) st = rill_predictor_config_set_threads(c, 2);
  if (!st) st = rill_predictor_config_set_schedule(c, schedule);
  if (!st) st = rill_predictor_config_set_constant_weights(c, constant);
  if (!st) st = rill_predictor_create(c, out);
  rill_predictor_config_destroy(c);
  return st;
}

static void stress(const char *model, const char *input_file, rill_schedule schedule, bool race_first_pack) {
  char path[512];
  snprintf(path, sizeof path, MODELS "%s", model);
  rill_status *st = open_model(path, schedule, true, &base);
  CHECK(st == NULL, "%s: %s", model, rill_status_message(st));
  if (st) {
    rill_status_destroy(st);
    return;
  }
  snprintf(path, sizeof path, MODELS "%s/refs/%s", model, input_file);
  st = rill_npy_load(path, &input);
  CHECK(st == NULL, "%s", rill_status_message(st));
  input_name = rill_predictor_input_name(base, 0);
  if (race_first_pack) {
    rill_predictor *plain = NULL;
    snprintf(path, sizeof path, MODELS "%s", model);
    st = open_model(path, schedule, false, &plain);
    CHECK(st == NULL, "%s: %s", model, rill_status_message(st));
    rill_status_destroy(st);
    CHECK(plain && run_once(plain, want, &nwant) == 0, "%s: single-threaded run", model);
    rill_predictor_destroy(plain);
  } else {
    CHECK(run_once(base, want, &nwant) == 0, "%s: single-threaded run", model);
  }

  worker w[THREADS];
  pthread_t t[THREADS];
  memset(w, 0, sizeof w);
  for (int i = 0; i < THREADS; i++) {
    st = rill_predictor_clone(base, &w[i].p);
    CHECK(st == NULL, "clone: %s", rill_status_message(st));
  }
  /* The clones outlive the predictor they came from. */
  rill_predictor_destroy(base);
  base = NULL;
  for (int i = 0; i < THREADS; i++)
    if (w[i].p) pthread_create(&t[i], NULL, work, &w[i]);
  for (int i = 0; i < THREADS; i++)
    if (w[i].p) pthread_join(t[i], NULL);
  for (int i = 0; i < THREADS; i++) {
    CHECK(w[i].errors == 0, "%s thread %d: %d failed runs", model, i, w[i].errors);
    CHECK(w[i].mismatches == 0, "%s thread %d: %d answers differ", model, i, w[i].mismatches);
    rill_predictor_destroy(w[i].p);
  }
  rill_tensor_destroy(input);
  input = NULL;
}

int main(void) {
  /* the clones outnumber the cores: let the pool's workers join them all the same, so
   * that the hand-off between clones and workers is exercised */
  rill_pool_fit_cores = false;
  stress("mnist_conv_bn_etienne", "input_img.npy", RILL_SCHEDULE_PARALLEL, false);
  stress("abalone_bn_mlp", "input_x.npy", RILL_SCHEDULE_SEQUENTIAL, false);
  stress("luotao1_example_mlp_2018", "input_img.npy", RILL_SCHEDULE_SEQUENTIAL, true);
  return check_report();
}
