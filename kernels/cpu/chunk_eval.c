/* chunk_eval CPU kernel. Each sequence is cut into chunks (first row, last row, type),
 * scanning labels left to right with the previous row's tag and type. With `other` the
 * other label's type (num_chunk_types), a chunk open at the previous row ends there when
 * the previous row is in a chunk and: this row is other, or of another type, or the
 * previous tag is B or I and this one is B or S, or the previous tag is E or S. A chunk
 * starts at this row when this row is not other and: the previous row is other, or of
 * another type, or this tag is B or S, or this tag is I or E after an E or S. A tag the
 * scheme lacks matches none of these (plain: a chunk is a run of one type). Inferred and
 * labelled chunks match when start, end and type are equal; excluded types count nowhere.
 * The three ratios are computed in float32. */
#include <stdbool.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

typedef struct scheme {
  int64_t ntags;
  int64_t b, i, e, s; /* tag numbers, -1 where the scheme has none */
} scheme;

typedef struct chunk {
  int64_t first, last, type;
} chunk;

static bool scheme_of(const char *name, scheme *sc) {
  static const struct {
    const char *name;
    scheme sc;
  } table[] = {
      {"IOB", {2, 0, 1, -1, -1}},
      {"IOE", {2, -1, 0, 1, -1}},
      {"IOBES", {4, 0, 1, 2, 3}},
      {"plain", {1, -1, -1, -1, -1}},
  };
  for (size_t k = 0; name && k < RILL_COUNTOF(table); k++)
    if (!strcmp(name, table[k].name)) {
      *sc = table[k].sc;
      return true;
    }
  return false;
}

static bool ends(const scheme *sc, int64_t other, int64_t ptag, int64_t ptype, int64_t tag,
                 int64_t type) {
  if (ptype == other) return false;
  if (type == other || type != ptype) return true;
  if (ptag == sc->b || ptag == sc->i) return tag == sc->b || tag == sc->s;
  return ptag == sc->e || ptag == sc->s;
}

static bool begins(const scheme *sc, int64_t other, int64_t ptag, int64_t ptype, int64_t tag,
                   int64_t type) {
  if (ptype == other) return type != other;
  if (type == other) return false;
  if (type != ptype || tag == sc->b || tag == sc->s) return true;
  if (tag == sc->i || tag == sc->e) return ptag == sc->e || ptag == sc->s;
  return false;
}

/* The chunks of labels v[0..len), in order, into out (room for len); their count in *n.
 * A label outside [0, other label] is an error naming input `slot` and the row. */
static rill_status *chunks_of(rill_kernel_ctx *ctx, size_t slot, const scheme *sc, int64_t other,
                              const int64_t *v, int64_t row0, int64_t len, chunk *out, int64_t *n) {
  const int64_t top = other * sc->ntags;
  int64_t count = 0, tag = -1, type = other, first = 0;
  bool open = false;
  for (int64_t k = 0; k < len; k++) {
    if (v[k] < 0 || v[k] > top)
      return rill_kernel_error(ctx, "input %s (%s): label %lld at row %lld is outside [0, %lld] "
                               "(%lld is the other label: num_chunk_types %lld times %lld tags)",
                               ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0),
                               (long long)v[k], (long long)(row0 + k), (long long)top,
                               (long long)top, (long long)other, (long long)sc->ntags);
    int64_t ptag = tag, ptype = type;
    tag = v[k] % sc->ntags;
    type = v[k] / sc->ntags;
    if (open && ends(sc, other, ptag, ptype, tag, type)) {
      out[count++] = (chunk){first, k - 1, ptype};
      open = false;
    }
    if (begins(sc, other, ptag, ptype, tag, type)) {
      first = k;
      open = true;
    }
  }
  if (open) out[count++] = (chunk){first, len - 1, type};
  *n = count;
  return NULL;
}

typedef struct counts {
  int64_t infer, label, correct;
} counts;

static bool excluded(const rill_attr_value *ex, int64_t type) {
  for (size_t k = 0; k < ex->n; k++)
    if (ex->list.ints[k] == type) return true;
  return false;
}

/* Adds one sequence's chunks to c: both lists are ordered and each is disjoint, so a
 * merge on the last row finds every chunk the two share. */
static void tally(const chunk *a, int64_t na, const chunk *b, int64_t nb, const rill_attr_value *ex,
                  counts *c) {
  for (int64_t k = 0; k < na; k++) c->infer += !excluded(ex, a[k].type);
  for (int64_t k = 0; k < nb; k++) c->label += !excluded(ex, b[k].type);
  for (int64_t i = 0, j = 0; i < na && j < nb;) {
    if (a[i].last < b[j].last) {
      i++;
    } else if (a[i].last > b[j].last) {
      j++;
    } else {
      c->correct += a[i].first == b[j].first && a[i].type == b[j].type && !excluded(ex, a[i].type);
      i++, j++;
    }
  }
}

/* Where sequence k starts and how long it is, after checking the layout. */
typedef struct layout {
  int64_t nseq, width;   /* width: padded row length; 0 with LoD */
  const uint64_t *offsets;
  const int64_t *lengths;
} layout;

static rill_status *layout_of(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *y,
                              layout *l) {
  const int64_t numel = rill_tensor_numel(y);
  const char *xn = rill_kin_name(ctx, RILL_CHUNK_EVAL_IN_INFERENCE, 0);
  const char *yn = rill_kin_name(ctx, RILL_CHUNK_EVAL_IN_LABEL, 0);
  if (rill_tensor_numel(x) != numel || x->dims.n != y->dims.n)
    return rill_kernel_error(ctx, "input Label (%s) has %lld labels in rank %d but Inference (%s) "
                             "has %lld in rank %d", yn, (long long)numel, (int)y->dims.n, xn,
                             (long long)rill_tensor_numel(x), (int)x->dims.n);
  memset(l, 0, sizeof *l);
  if (y->lod.nlevels > 0) {
    const rill_lod_level *ly = &y->lod.levels[0], *lx = &x->lod.levels[0];
    if (y->lod.nlevels != 1)
      return rill_kernel_error(ctx, "input Label (%s) has %zu LoD levels, expected 1", yn,
                               y->lod.nlevels);
    if (x->lod.nlevels != 1 || lx->n != ly->n ||
        memcmp(lx->offsets, ly->offsets, ly->n * sizeof *ly->offsets))
      return rill_kernel_error(ctx, "input Inference (%s) needs the LoD of Label (%s)", xn, yn);
    if (ly->n < 1 || ly->offsets[0] != 0 || (int64_t)ly->offsets[ly->n - 1] > numel)
      return rill_kernel_error(ctx, "input Label (%s): its LoD does not fit its %lld labels", yn,
                               (long long)numel);
    for (size_t k = 1; k < ly->n; k++)
      if (ly->offsets[k] < ly->offsets[k - 1])
        return rill_kernel_error(ctx, "input Label (%s): its LoD offsets decrease at %zu", yn, k);
    l->nseq = (int64_t)ly->n - 1;
    l->offsets = ly->offsets;
    return NULL;
  }
  rill_tensor *len = rill_kin(ctx, RILL_CHUNK_EVAL_IN_SEQ_LENGTH, 0);
  const char *ln = rill_kin_name(ctx, RILL_CHUNK_EVAL_IN_SEQ_LENGTH, 0);
  if (!len)
    return rill_kernel_error(ctx, "input Label (%s) has no LoD and SeqLength is not given", yn);
  RILL_TRY(rill_kin_need(ctx, RILL_CHUNK_EVAL_IN_SEQ_LENGTH, 0, RILL_DTYPE_INT64, &len));
  bool trailing_one = y->dims.n == 3 && y->dims.d[2] == 1;
  if (y->dims.n != 2 && !trailing_one) {
    char s[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input Label (%s) has shape %s, expected [N, S] or [N, S, 1] "
                             "with SeqLength", yn, rill_dims_str(&y->dims, s, sizeof s));
  }
  l->nseq = rill_tensor_numel(len);
  l->width = y->dims.d[1];
  l->lengths = rill_tensor_ptr(len);
  if (l->nseq > y->dims.d[0])
    return rill_kernel_error(ctx, "input SeqLength (%s) has %lld lengths for %lld rows", ln,
                             (long long)l->nseq, (long long)y->dims.d[0]);
  for (int64_t k = 0; k < l->nseq; k++)
    if (l->lengths[k] < 0 || l->lengths[k] > l->width)
      return rill_kernel_error(ctx, "input SeqLength (%s): length %lld of row %lld is outside "
                               "[0, %lld]", ln, (long long)l->lengths[k], (long long)k,
                               (long long)l->width);
  return NULL;
}

static void seq_of(const layout *l, int64_t k, int64_t *start, int64_t *len) {
  if (l->lengths) {
    *start = k * l->width;
    *len = l->lengths[k];
  } else {
    *start = (int64_t)l->offsets[k];
    *len = (int64_t)(l->offsets[k + 1] - l->offsets[k]);
  }
}

rill_status *rill_cpu_chunk_eval(rill_kernel_ctx *ctx) {
  const rill_attr_value *a = ctx->attrs;
  scheme sc;
  if (!scheme_of(a[RILL_CHUNK_EVAL_ATTR_CHUNK_SCHEME].v.s, &sc))
    return rill_kernel_error(ctx, "attribute chunk_scheme is \"%s\", expected IOB, IOE, IOBES or plain",
                             a[RILL_CHUNK_EVAL_ATTR_CHUNK_SCHEME].v.s ? a[RILL_CHUNK_EVAL_ATTR_CHUNK_SCHEME].v.s : "");
  const int64_t other = a[RILL_CHUNK_EVAL_ATTR_NUM_CHUNK_TYPES].v.i;
  if (other <= 0)
    return rill_kernel_error(ctx, "attribute num_chunk_types is %lld, expected at least 1",
                             (long long)other);
  rill_tensor *x, *y, *o[6];
  RILL_TRY(rill_kin_need(ctx, RILL_CHUNK_EVAL_IN_INFERENCE, 0, RILL_DTYPE_INT64, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_CHUNK_EVAL_IN_LABEL, 0, RILL_DTYPE_INT64, &y));
  static const size_t outs[6] = {
      RILL_CHUNK_EVAL_OUT_PRECISION,        RILL_CHUNK_EVAL_OUT_RECALL,
      RILL_CHUNK_EVAL_OUT_F1_SCORE,         RILL_CHUNK_EVAL_OUT_NUM_INFER_CHUNKS,
      RILL_CHUNK_EVAL_OUT_NUM_LABEL_CHUNKS, RILL_CHUNK_EVAL_OUT_NUM_CORRECT_CHUNKS,
  };
  for (size_t k = 0; k < 6; k++) {
    RILL_TRY(rill_kout_need(ctx, outs[k], 0, k < 3 ? RILL_DTYPE_FP32 : RILL_DTYPE_INT64, &o[k]));
    if (rill_tensor_numel(o[k]) != 1)
      return rill_kernel_error(ctx, "output %s (%s) holds %lld values, expected 1",
                               ctx->schema->outputs[outs[k]].name, rill_kout_name(ctx, outs[k], 0),
                               (long long)rill_tensor_numel(o[k]));
  }
  layout l;
  RILL_TRY(layout_of(ctx, x, y, &l));
  int64_t longest = 0;
  for (int64_t k = 0; k < l.nseq; k++) {
    int64_t start, len;
    seq_of(&l, k, &start, &len);
    longest = len > longest ? len : longest;
  }
  chunk *ca = rill_malloc((size_t)(2 * longest + 1) * sizeof *ca);
  if (!ca)
    return rill_kernel_error(ctx, "out of memory for the chunks of a sequence of %lld labels",
                             (long long)longest);
  chunk *cb = ca + longest;
  const int64_t *xv = rill_tensor_ptr(x), *yv = rill_tensor_ptr(y);
  counts c = {0, 0, 0};
  rill_status *st = NULL;
  for (int64_t k = 0; k < l.nseq && !st; k++) {
    int64_t start, len, na, nb;
    seq_of(&l, k, &start, &len);
    st = chunks_of(ctx, RILL_CHUNK_EVAL_IN_INFERENCE, &sc, other, xv + start, start, len, ca, &na);
    if (!st) st = chunks_of(ctx, RILL_CHUNK_EVAL_IN_LABEL, &sc, other, yv + start, start, len, cb, &nb);
    if (!st) tally(ca, na, cb, nb, &a[RILL_CHUNK_EVAL_ATTR_EXCLUDED_CHUNK_TYPES], &c);
  }
  rill_free(ca);
  if (st) return st;
  float p = c.infer ? (float)c.correct / (float)c.infer : 0.0f;
  float r = c.label ? (float)c.correct / (float)c.label : 0.0f;
  float f = c.correct ? 2.0f * p * r / (p + r) : 0.0f;
  *(float *)rill_tensor_ptr(o[0]) = p;
  *(float *)rill_tensor_ptr(o[1]) = r;
  *(float *)rill_tensor_ptr(o[2]) = f;
  *(int64_t *)rill_tensor_ptr(o[3]) = c.infer;
  *(int64_t *)rill_tensor_ptr(o[4]) = c.label;
  *(int64_t *)rill_tensor_ptr(o[5]) = c.correct;
  return NULL;
}
