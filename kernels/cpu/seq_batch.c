/* The sequence-to-batch reordering of lstm and gru (seq_batch.h). */
#include "kernels/cpu/seq_batch.h"

#include <stdlib.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

void rill_seq_batch_free(rill_seq_batch *b) {
  rill_free(b->starts);
  rill_free(b->row);
  rill_free(b->order);
  memset(b, 0, sizeof *b);
}

rill_status *rill_seq_batch_make(const rill_lod_level *lv, int64_t rows, bool reverse,
                                 rill_seq_batch *out) {
  memset(out, 0, sizeof *out);
  int64_t nseq = lv->n > 0 ? (int64_t)lv->n - 1 : 0;
  out->nseq = nseq;
  out->rows = rows;
  out->order = rill_malloc((size_t)(nseq + 1) * sizeof *out->order);
  out->row = rill_malloc((size_t)(rows + 1) * sizeof *out->row);
  if (!out->order || !out->row) {
    rill_seq_batch_free(out);
    return rill_oom();
  }
  /* Insertion sort by length, longest first, keeping sequence order among equals
   * (Paddle's std::sort is an insertion sort too below 16 sequences). */
  int64_t longest = 0;
  for (int64_t s = 0; s < nseq; s++) {
    int64_t len = (int64_t)(lv->offsets[s + 1] - lv->offsets[s]), p = s;
    if (len > longest) longest = len;
    while (p > 0) {
      int64_t q = out->order[p - 1];
      if ((int64_t)(lv->offsets[q + 1] - lv->offsets[q]) >= len) break;
      out->order[p] = q;
      p--;
    }
    out->order[p] = s;
  }
  out->steps = longest;
  out->starts = rill_malloc((size_t)(longest + 1) * sizeof *out->starts);
  if (!out->starts) {
    rill_seq_batch_free(out);
    return rill_oom();
  }
  int64_t i = 0;
  out->starts[0] = 0;
  for (int64_t n = 0; n < longest; n++) {
    for (int64_t p = 0; p < nseq; p++) {
      int64_t s = out->order[p];
      int64_t start = (int64_t)lv->offsets[s], len = (int64_t)lv->offsets[s + 1] - start;
      if (n >= len) break;
      out->row[i++] = reverse ? start + len - 1 - n : start + n;
    }
    out->starts[n + 1] = i;
  }
  return NULL;
}

rill_status *rill_ract_parse(const rill_kernel_ctx *ctx, const char *attr, const char *name,
                             rill_ract *out) {
  static const struct {
    const char *name;
    rill_ract kind;
  } names[] = {{"sigmoid", RILL_RACT_SIGMOID}, {"tanh", RILL_RACT_TANH},
               {"relu", RILL_RACT_RELU},       {"identity", RILL_RACT_IDENTITY},
               {"", RILL_RACT_IDENTITY}};
  const char *n = name ? name : "";
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i].name, n) == 0) {
      *out = names[i].kind;
      return NULL;
    }
  return rill_kernel_error(ctx, "attribute %s is '%s': expected sigmoid, tanh, relu or identity",
                           attr, n);
}
