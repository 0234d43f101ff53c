/* `rill prune`: a smaller inference model computing chosen variables of a model, written
 * in Paddle's layout (a `__model__` with feed/fetch ops and the parameters it still
 * needs), through rill_program_prune, rill_program_save and rill_program_save_vars. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

enum { PRUNE_MAX_NAMES = 256 };

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One feed or fetch op: X -> Out with attribute col. */
static rill_status *plumbing_op(rill_program *p, const char *type, const char *x, const char *out,
                                int32_t col, bool at_front) {
  rill_op_builder *b;
  CLI_TRY(rill_op_builder_create(type, &b));
  rill_status *st = rill_op_builder_input(b, "X", &x, 1);
  if (!st) st = rill_op_builder_output(b, "Out", &out, 1);
  if (!st) st = rill_op_builder_attr_int(b, "col", col);
  if (!st) st = at_front ? rill_op_builder_insert(b, p, 0, 0) : rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

/* Feed ops are prepended one by one, as Paddle's save_inference_model does, so they end
 * up in reverse col order; fetch ops are appended. */
static rill_status *add_plumbing(rill_program *p, const char *const *feeds, size_t nfeeds,
                                 const char *const *fetches, size_t nfetch) {
  if (!rill_block_var_index(p, 0, "feed", NULL))
    CLI_TRY(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0,
                                0, true));
  if (!rill_block_var_index(p, 0, "fetch", NULL))
    CLI_TRY(rill_block_add_var(p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0,
                                true));
  for (size_t i = 0; i < nfeeds; i++)
    CLI_TRY(plumbing_op(p, "feed", "feed", feeds[i], (int32_t)i, true));
  for (size_t i = 0; i < nfetch; i++)
    CLI_TRY(plumbing_op(p, "fetch", fetches[i], "fetch", (int32_t)i, false));
  return NULL;
}

/* Block 0's saved variables (persistable, not feed/fetch plumbing), sorted by name. */
static rill_status *saved_names(const rill_program *p, const char ***out, size_t *n) {
  size_t nvars = rill_block_num_vars(p, 0);
  const char **names = calloc(nvars ? nvars : 1, sizeof *names);
  if (!names) return cli_oom();
  size_t k = 0;
  for (size_t i = 0; i < nvars; i++) {
    rill_var_info v;
    rill_status *st = rill_block_var_info(p, 0, i, &v);
    if (st) {
      free(names);
      return st;
    }
    if (!v.persistable) continue;
    if (v.type == RILL_VAR_FEED_MINIBATCH || v.type == RILL_VAR_FETCH_LIST ||
        v.type == RILL_VAR_RAW || v.type == RILL_VAR_READER)
      continue;
    names[k++] = v.name;
  }
  qsort(names, k, sizeof *names, cmp_str);
  *out = names;
  *n = k;
  return NULL;
}

static int run_prune(const char *model_path, const char *params, const char **feeds,
                     size_t nfeeds, const char **fetches, size_t nfetch, const char *outdir,
                     const char *combined) {
  rill_model *m = NULL;
  rill_status *st = rill_model_load(model_path, params, &m);
  if (st) return fail(st);
  const char *model_feeds[PRUNE_MAX_NAMES], *model_fetches[PRUNE_MAX_NAMES];
  if (nfeeds == 0) {
    nfeeds = rill_model_num_inputs(m);
    if (nfeeds > PRUNE_MAX_NAMES) nfeeds = PRUNE_MAX_NAMES;
    for (size_t i = 0; i < nfeeds; i++) model_feeds[i] = rill_model_input_name(m, i);
    feeds = model_feeds;
  }
  if (nfetch == 0) {
    nfetch = rill_model_num_outputs(m);
    if (nfetch > PRUNE_MAX_NAMES) nfetch = PRUNE_MAX_NAMES;
    for (size_t i = 0; i < nfetch; i++) model_fetches[i] = rill_model_output_name(m, i);
    fetches = model_fetches;
  }
  const rill_program *src = rill_model_program(m);
  rill_program *p = NULL;
  const char **names = NULL;
  size_t nnames = 0;
  char *path = NULL;
  st = rill_program_prune(src, feeds, nfeeds, fetches, nfetch, &p);
  if (!st) st = add_plumbing(p, feeds, nfeeds, fetches, nfetch);
  if (!st) st = rill_program_validate(p);
  if (!st && mkdir(outdir, 0777) != 0 && errno != EEXIST)
    st = rill_status_create(RILL_IO, "cannot create directory '%s': %s", outdir, strerror(errno));
  if (!st) {
    size_t len = strlen(outdir) + sizeof "/__model__";
    path = malloc(len);
    if (!path) st = cli_oom();
    else snprintf(path, len, "%s/__model__", outdir);
  }
  if (!st) st = rill_program_save(p, path);
  if (!st) st = saved_names(p, &names, &nnames);
  if (!st) st = rill_program_save_vars(p, rill_model_scope(m), outdir, names, nnames, combined);
  if (!st) {
    printf("kept %zu of %zu ops; wrote %s and %zu variables%s%s\n", rill_block_num_ops(p, 0),
           rill_block_num_ops(src, 0), path, nnames, combined ? " into " : "",
           combined ? combined : "");
    for (size_t i = 0; i < nfeeds; i++) printf("  feed  col %zu: %s\n", i, feeds[i]);
    for (size_t i = 0; i < nfetch; i++) printf("  fetch col %zu: %s\n", i, fetches[i]);
  }
  free(path);
  free(names);
  rill_program_destroy(p);
  rill_model_destroy(m);
  return st ? fail(st) : EXIT_OK;
}

int cmd_prune(int argc, char **argv) {
  const char *model = NULL, *params = NULL, *outdir = NULL, *combined = NULL;
  const char *feeds[PRUNE_MAX_NAMES], *fetches[PRUNE_MAX_NAMES];
  size_t nfeeds = 0, nfetch = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-') {
      if (model) return usage_error("unexpected argument %s", a);
      model = a;
      continue;
    }
    if (i + 1 >= argc) return usage_error("%s needs a value", a);
    const char *v = argv[++i];
    if (strcmp(a, "--fetch") == 0 || strcmp(a, "--feed") == 0) {
      bool fetch = strcmp(a, "--fetch") == 0;
      size_t *n = fetch ? &nfetch : &nfeeds;
      if (*n == PRUNE_MAX_NAMES) return usage_error("at most 256 names per option, at %s", v);
      (fetch ? fetches : feeds)[(*n)++] = v;
    } else if (strcmp(a, "--output") == 0) {
      outdir = v;
    } else if (strcmp(a, "--params") == 0) {
      params = v;
    } else if (strcmp(a, "--combined") == 0) {
      combined = v;
    } else {
      return usage_error("unknown option %s", a);
    }
  }
  if (!model) return usage_error("prune needs a MODEL%s", "");
  if (!outdir) return usage_error("prune needs --output DIR%s", "");
  return run_prune(model, params, feeds, nfeeds, fetches, nfetch, outdir, combined);
}
