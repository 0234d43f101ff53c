/* beam_search, beam_search_decode and gather_tree CPU kernels.
 *
 * beam_search keeps each source's best beam_size candidates, best first, by insertion:
 * they rank by score and, among equal scores, the one from the later prefix row first;
 * a candidate equal to a kept one in both goes below it, and when the beam is full one
 * equal to the last kept candidate replaces it (Paddle's order, ties included). The kept
 * candidates are then grouped by prefix row, each group still best first. */
#include <math.h>
#include <stdint.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

/* Replaces t's LoD with copies of two levels (a borrowed view, copied by rill_lod_copy). */
static rill_status *set_lod2(rill_tensor *t, const uint64_t *l0, size_t n0, const uint64_t *l1,
                             size_t n1) {
  rill_lod_level lv[2] = {{n0, (uint64_t *)l0}, {n1, (uint64_t *)l1}};
  rill_lod view = {2, lv};
  return rill_lod_copy(&t->lod, &view);
}

/* ---- beam_search ---- */

typedef struct bs_item {
  int64_t offset, id;
  float score;
} bs_item;

/* a ranks below b */
static bool bs_less(const bs_item *a, const bs_item *b) {
  return a->score < b->score || (a->score == b->score && a->offset < b->offset);
}

/* Inserts it into top (n kept of at most cap, best first); returns the new count. */
static size_t bs_insert(bs_item *top, size_t n, size_t cap, const bs_item *it) {
  if (n == cap && bs_less(it, &top[cap - 1])) return n;
  size_t k = n < cap ? n++ : cap - 1;
  while (k > 0 && bs_less(&top[k - 1], it)) {
    top[k] = top[k - 1];
    k--;
  }
  top[k] = *it;
  return n;
}

/* A one-element-per-row input of `dtype` with `rows` rows. */
static rill_status *bs_per_row(rill_kernel_ctx *ctx, size_t slot, rill_dtype dtype, int64_t rows,
                               rill_tensor **out) {
  RILL_TRY(rill_kin_need(ctx, slot, 0, dtype, out));
  if (rill_tensor_numel(*out) != rows)
    return rill_kernel_error(ctx, "input %s (%s) has %lld elements; it needs one per row of "
                             "scores (%lld)", ctx->schema->inputs[slot].name,
                             rill_kin_name(ctx, slot, 0), (long long)rill_tensor_numel(*out),
                             (long long)rows);
  return NULL;
}

rill_status *rill_cpu_beam_search_fp32(rill_kernel_ctx *ctx) {
  enum { PRE_IDS = RILL_BEAM_SEARCH_IN_PRE_IDS, PRE_SCORES = RILL_BEAM_SEARCH_IN_PRE_SCORES,
         IDS = RILL_BEAM_SEARCH_IN_IDS, SCORES = RILL_BEAM_SEARCH_IN_SCORES };
  rill_tensor *scores, *pre_ids, *pre_scores, *ids = rill_kin(ctx, IDS, 0);
  rill_tensor *sel_ids = rill_kout(ctx, RILL_BEAM_SEARCH_OUT_SELECTED_IDS, 0);
  rill_tensor *sel_scores = rill_kout(ctx, RILL_BEAM_SEARCH_OUT_SELECTED_SCORES, 0);
  rill_tensor *parent = rill_kout(ctx, RILL_BEAM_SEARCH_OUT_PARENT_IDX, 0);
  int32_t level = ctx->attrs[RILL_BEAM_SEARCH_ATTR_LEVEL].v.i;
  int32_t beam = ctx->attrs[RILL_BEAM_SEARCH_ATTR_BEAM_SIZE].v.i;
  int64_t end_id = ctx->attrs[RILL_BEAM_SEARCH_ATTR_END_ID].v.i;
  bool accumulated = ctx->attrs[RILL_BEAM_SEARCH_ATTR_IS_ACCUMULATED].v.b;
  const char *sn = rill_kin_name(ctx, SCORES, 0);
  if (!sel_ids || !sel_scores)
    return rill_kernel_error(ctx, "needs outputs selected_ids and selected_scores");
  if (beam < 1) return rill_kernel_error(ctx, "attribute beam_size is %d; it must be >= 1", (int)beam);
  RILL_TRY(rill_kin_need(ctx, SCORES, 0, RILL_DTYPE_FP32, &scores));
  if (scores->dims.n < 1)
    return rill_kernel_error(ctx, "input scores (%s) must have rank >= 1", sn);
  int64_t rows = scores->dims.d[0], width = rows ? rill_tensor_numel(scores) / rows : 0;
  if (level < 0 || (size_t)level >= scores->lod.nlevels)
    return rill_kernel_error(ctx, "input scores (%s) has %zu LoD levels; level %d needs at "
                             "least %d (the sources' level, and their prefixes' below it)",
                             sn, scores->lod.nlevels, (int)level, (int)level + 1);
  rill_status *st = rill_lod_check(&scores->lod, rows);
  if (st) {
    rill_status *e = rill_kernel_error(ctx, "input scores (%s) has a bad LoD: %s", sn,
                                       rill_status_message(st));
    rill_status_destroy(st);
    return e;
  }
  RILL_TRY(bs_per_row(ctx, PRE_IDS, RILL_DTYPE_INT64, rows, &pre_ids));
  RILL_TRY(bs_per_row(ctx, PRE_SCORES, RILL_DTYPE_FP32, rows, &pre_scores));
  if (ids) {
    RILL_TRY(rill_kin_need(ctx, IDS, 0, RILL_DTYPE_INT64, &ids));
    if (rill_tensor_numel(ids) != rill_tensor_numel(scores))
      return rill_kernel_error(ctx, "input ids (%s) has %lld elements, scores (%s) %lld: they "
                               "must agree", rill_kin_name(ctx, IDS, 0),
                               (long long)rill_tensor_numel(ids), sn,
                               (long long)rill_tensor_numel(scores));
  }
  const rill_lod_level *lv = &scores->lod.levels[level];
  if (lv->n < 1)
    return rill_kernel_error(ctx, "input scores (%s) has an empty LoD level %d", sn, (int)level);
  size_t nseq = lv->n - 1;
  const int64_t *pid = rill_tensor_ptr(pre_ids), *cid = ids ? rill_tensor_ptr(ids) : NULL;
  const float *psc = rill_tensor_ptr(pre_scores), *csc = rill_tensor_ptr(scores);

  /* absolute row offsets of the sources, and room for each one's kept candidates */
  uint64_t *hl = rill_malloc((nseq + 1) * sizeof *hl);
  uint64_t *ll = rill_malloc(((size_t)rows + 1) * sizeof *ll);
  size_t *at = rill_malloc((nseq + 1) * sizeof *at), *kept = rill_malloc((nseq + 1) * sizeof *kept);
  st = NULL;
  bs_item *items = NULL;
  int64_t *order = NULL;
  if (!hl || !ll || !at || !kept) {
    st = rill_oom();
    goto done;
  }
  at[0] = 0;
  for (size_t s = 0; s <= nseq; s++) {
    uint64_t o = lv->offsets[s];
    for (size_t l = (size_t)level + 1; l < scores->lod.nlevels; l++) o = scores->lod.levels[l].offsets[o];
    hl[s] = o;
    if (s == 0) continue;
    uint64_t cand = 0;
    for (uint64_t r = hl[s - 1]; r < o; r++) cand += pid[r] == end_id ? 1 : (uint64_t)width;
    at[s] = at[s - 1] + (cand < (uint64_t)beam ? (size_t)cand : (size_t)beam);
  }
  items = rill_malloc((at[nseq] ? at[nseq] : 1) * sizeof *items);
  order = rill_calloc((size_t)rows + 1, sizeof *order);
  if (!items || !order) {
    st = rill_oom();
    goto done;
  }
  size_t total = 0;
  for (size_t s = 0; s < nseq; s++) {
    bs_item *top = items + at[s];
    size_t n = 0, cap = at[s + 1] - at[s];
    for (uint64_t r = hl[s]; r < hl[s + 1] && cap; r++) {
      bs_item it = {(int64_t)r, end_id, psc[r]};
      if (pid[r] == end_id) {
        n = bs_insert(top, n, cap, &it);
        continue;
      }
      for (int64_t d = 0; d < width; d++) {
        int64_t k = (int64_t)r * width + d;
        it.id = cid ? cid[k] : d;
        it.score = accumulated ? csc[k] : psc[r] + logf(csc[k]);
        n = bs_insert(top, n, cap, &it);
      }
    }
    /* a source whose prefixes all ended and chose only end_id again is done: dropped */
    bool finished = true;
    for (size_t j = 0; j < n && finished; j++)
      finished = top[j].id == end_id && pid[top[j].offset] == end_id;
    if (finished) n = 0;
    for (size_t j = 0; j < n; j++) order[top[j].offset + 1]++;
    kept[s] = n;
    total += n;
  }
  /* group by prefix row, keeping each source's order */
  ll[0] = 0;
  for (int64_t r = 0; r < rows; r++) ll[r + 1] = ll[r] + (uint64_t)order[r + 1];
  rill_dims col = {.n = 2, .d = {(int64_t)total, 1}}, row = {.n = 1, .d = {(int64_t)total}};
  if ((st = rill_tensor_alloc(sel_ids, RILL_DTYPE_INT64, &col)) ||
      (st = rill_tensor_alloc(sel_scores, RILL_DTYPE_FP32, &col)) ||
      (parent && (st = rill_tensor_alloc(parent, RILL_DTYPE_INT32, &row))))
    goto done;
  int64_t *oid = rill_tensor_ptr(sel_ids);
  float *osc = rill_tensor_ptr(sel_scores);
  int32_t *opar = parent ? rill_tensor_ptr(parent) : NULL;
  for (int64_t r = 0; r < rows; r++) order[r] = (int64_t)ll[r];
  for (size_t s = 0; s < nseq; s++)
    for (size_t j = at[s]; j < at[s] + kept[s]; j++) {
      const bs_item *it = &items[j];
      int64_t p = order[it->offset]++;
      oid[p] = it->id;
      osc[p] = it->score;
      if (opar) opar[p] = (int32_t)it->offset;
    }
  if ((st = set_lod2(sel_ids, hl, nseq + 1, ll, (size_t)rows + 1)) ||
      (st = set_lod2(sel_scores, hl, nseq + 1, ll, (size_t)rows + 1)))
    goto done;
  if (parent) rill_lod_clear(&parent->lod);
done:
  rill_free(hl);
  rill_free(ll);
  rill_free(at);
  rill_free(kept);
  rill_free(items);
  rill_free(order);
  return st;
}

/* ---- beam_search_decode ---- */

/* One sentence, built from the last step back: word k of the walk is at slot k. */
typedef struct bsd_sentence {
  size_t start, len; /* in the decode's word buffer: start + k for k < len */
} bsd_sentence;

/* The array input `slot`, or an error naming it. */
static rill_status *bsd_array(rill_kernel_ctx *ctx, size_t slot, const rill_tensor_array **out) {
  rill_variable *v = ctx->nin[slot] ? ctx->in[slot][0] : NULL;
  const rill_tensor_array *a = v ? rill_variable_array(v) : NULL;
  if (!a)
    return rill_kernel_error(ctx, "input %s (%s) is missing or not a tensor array",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0));
  *out = a;
  return NULL;
}

/* Checks step t of the arrays: ids int64 one per row, scores of `dt` likewise, both with
 * a 2-level LoD over their rows and srcs sources. */
static rill_status *bsd_check_step(rill_kernel_ctx *ctx, const rill_tensor *id, const rill_tensor *sc,
                                   size_t t, rill_dtype dt, size_t srcs) {
  const char *in = rill_kin_name(ctx, 0, 0), *sn = rill_kin_name(ctx, 1, 0);
  /* a step after which every source had ended selects nothing: no data, 0 rows */
  if (rill_tensor_is_set(id) && id->dtype != RILL_DTYPE_INT64)
    return rill_kernel_error(ctx, "item %zu of input Ids (%s) is %s, expected int64", t, in,
                             rill_dtype_name(id->dtype));
  if (rill_tensor_is_set(sc) && sc->dtype != dt)
    return rill_kernel_error(ctx, "item %zu of input Scores (%s) is %s, item 0 %s: they must "
                             "agree", t, sn, rill_dtype_name(sc->dtype), rill_dtype_name(dt));
  int64_t rows = rill_tensor_is_set(id) && id->dims.n ? id->dims.d[0] : 0;
  if (rill_tensor_is_set(id) && (id->dims.n < 1 || rill_tensor_numel(id) != rows))
    return rill_kernel_error(ctx, "item %zu of input Ids (%s) must be [N] or [N, 1]", t, in);
  if (rill_tensor_numel(sc) != rows)
    return rill_kernel_error(ctx, "item %zu of input Scores (%s) has %lld elements, Ids (%s) "
                             "%lld: they must agree", t, sn, (long long)rill_tensor_numel(sc),
                             in, (long long)rows);
  if (id->lod.nlevels != 2)
    return rill_kernel_error(ctx, "item %zu of input Ids (%s) has %zu LoD levels, expected 2 "
                             "(sources -> prefixes -> selections, as beam_search writes them)",
                             t, in, id->lod.nlevels);
  rill_status *st = rill_lod_check(&id->lod, rows);
  if (st) {
    rill_status *e = rill_kernel_error(ctx, "item %zu of input Ids (%s) has a bad LoD: %s", t, in,
                                       rill_status_message(st));
    rill_status_destroy(st);
    return e;
  }
  if (id->lod.levels[0].n != srcs + 1)
    return rill_kernel_error(ctx, "item %zu of input Ids (%s) has %zu sources, item 0 %zu: every "
                             "step must have the same", t, in, id->lod.levels[0].n - 1, srcs);
  return NULL;
}

rill_status *rill_cpu_beam_search_decode(rill_kernel_ctx *ctx) {
  const rill_tensor_array *ids, *scs;
  RILL_TRY(bsd_array(ctx, 0, &ids));
  RILL_TRY(bsd_array(ctx, 1, &scs));
  rill_tensor *out_ids = rill_kout(ctx, 0, 0), *out_sc = rill_kout(ctx, 1, 0);
  const char *in = rill_kin_name(ctx, 0, 0);
  int32_t beam = ctx->attrs[RILL_BEAM_SEARCH_DECODE_ATTR_BEAM_SIZE].v.i;
  int64_t end_id = ctx->attrs[RILL_BEAM_SEARCH_DECODE_ATTR_END_ID].v.i;
  if (!out_ids || !out_sc)
    return rill_kernel_error(ctx, "needs outputs SentenceIds and SentenceScores");
  if (beam < 1) return rill_kernel_error(ctx, "attribute beam_size is %d; it must be >= 1", (int)beam);
  if (ids->n == 0) return rill_kernel_error(ctx, "input Ids (%s) has no steps", in);
  if (ids->n != scs->n)
    return rill_kernel_error(ctx, "input Ids (%s) has %zu steps, Scores (%s) %zu: they must agree",
                             in, ids->n, rill_kin_name(ctx, 1, 0), scs->n);
  rill_dtype dt = scs->items[0].dtype;
  if (!rill_tensor_is_set(&scs->items[0]) || (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64))
    return rill_kernel_error(ctx, "item 0 of input Scores (%s) must be a float32 or float64 "
                             "tensor with data", rill_kin_name(ctx, 1, 0));
  const rill_tensor *id0 = &ids->items[0];
  if (!rill_tensor_is_set(id0) || id0->lod.nlevels != 2 || id0->lod.levels[0].n < 2)
    return rill_kernel_error(ctx, "item 0 of input Ids (%s) must hold at least one source in a "
                             "LoD of 2 levels", in);
  size_t srcs = id0->lod.levels[0].n - 1, steps = ids->n, nb = (size_t)beam;
  for (size_t t = 0; t < steps; t++)
    RILL_TRY(bsd_check_step(ctx, &ids->items[t], &scs->items[t], t, dt, srcs));

  /* every sentence slot can take one word per step */
  if (nb > SIZE_MAX / sizeof(double) / srcs / steps)
    return rill_kernel_error(ctx, "beam_size %d for %zu sources over %zu steps is too large",
                             (int)beam, srcs, steps);
  size_t nsent = srcs * nb, cap = nsent * steps;
  bsd_sentence *sent = rill_calloc(nsent, sizeof *sent);
  size_t *prefix = rill_malloc(nsent * sizeof *prefix), *sorted = rill_malloc(nsent * sizeof *sorted);
  size_t *nprefix = rill_calloc(srcs, sizeof *nprefix);
  int64_t *words = rill_malloc((cap ? cap : 1) * sizeof *words);
  double *wscore = rill_malloc((cap ? cap : 1) * sizeof *wscore);
  size_t *rank = rill_malloc(nb * sizeof *rank);
  uint64_t *l0 = rill_malloc((srcs + 1) * sizeof *l0), *l1 = rill_malloc((nsent + 1) * sizeof *l1);
  rill_status *st = NULL;
  if (!sent || !prefix || !sorted || !nprefix || !words || !wscore || !rank || !l0 || !l1) {
    st = rill_oom();
    goto done;
  }
  for (size_t i = 0; i < nsent; i++) sent[i].start = i * steps;
  for (size_t t = steps; t-- > 0;) {
    const rill_tensor *id = &ids->items[t], *sc = &scs->items[t];
    const uint64_t *src = id->lod.levels[0].offsets, *cand = id->lod.levels[1].offsets;
    const int64_t *iv = id->buf ? rill_tensor_ptr(id) : NULL;
    const void *sv = sc->buf ? rill_tensor_ptr(sc) : NULL;
    for (size_t s = 0; s < srcs; s++) {
      bsd_sentence *ss = sent + s * nb;
      size_t *pp = prefix + s * nb;
      if (nprefix[s] == 0) {
        /* the source ended at this step or this is the last one: every selection here
         * starts a sentence */
        for (uint64_t p = src[s]; p < src[s + 1]; p++)
          for (uint64_t c = cand[p]; c < cand[p + 1]; c++) {
            if (nprefix[s] == nb) {
              st = rill_kernel_error(ctx, "item %zu of input Ids (%s) selects more than "
                                     "beam_size (%d) ids for source %zu", t, in, (int)beam, s);
              goto done;
            }
            size_t k = nprefix[s]++;
            words[ss[k].start] = iv[c];
            wscore[ss[k].start] = dt == RILL_DTYPE_FP32 ? ((const float *)sv)[c]
                                                        : ((const double *)sv)[c];
            ss[k].len = 1;
            pp[k] = (size_t)p;
          }
        continue;
      }
      /* follow each sentence's prefix row back to this step's selection, then find the
       * prefix that selection extends */
      uint64_t p = src[s];
      for (size_t k = 0; k < nprefix[s]; k++) {
        size_t c = pp[k];
        if (src[s] >= src[s + 1] || c < cand[src[s]] || c >= cand[src[s + 1]]) {
          st = rill_kernel_error(ctx, "item %zu of input Ids (%s) does not hold row %zu of "
                                 "source %zu that step %zu extends", t, in, c, s, t + 1);
          goto done;
        }
        if (iv[c] != end_id || ss[k].len == 0) {
          words[ss[k].start + ss[k].len] = iv[c];
          wscore[ss[k].start + ss[k].len] = dt == RILL_DTYPE_FP32 ? ((const float *)sv)[c]
                                                                  : ((const double *)sv)[c];
          ss[k].len++;
        }
        while (cand[p + 1] <= c) p++;
        pp[k] = (size_t)p;
      }
    }
  }
  /* each source's sentences by their final score, best first (ties keep their order;
   * slots left empty last) */
  size_t total = 0;
  l0[0] = 0;
  l1[0] = 0;
  for (size_t s = 0; s < srcs; s++) {
    const bsd_sentence *ss = sent + s * nb;
    for (size_t i = 0; i < nb; i++) {
      size_t j = i;
      while (j > 0) {
        const bsd_sentence *a = &ss[rank[j - 1]];
        bool below = a->len == 0 ? ss[i].len > 0
                                 : ss[i].len > 0 && wscore[ss[i].start] > wscore[a->start];
        if (!below) break;
        rank[j] = rank[j - 1];
        j--;
      }
      rank[j] = i;
    }
    for (size_t i = 0; i < nb; i++) {
      l1[s * nb + i + 1] = l1[s * nb + i] + ss[rank[i]].len;
      total += ss[rank[i]].len;
    }
    l0[s + 1] = (s + 1) * nb;
    for (size_t i = 0; i < nb; i++) sorted[s * nb + i] = rank[i];
  }
  rill_dims d = {.n = 1, .d = {(int64_t)total}};
  if ((st = rill_tensor_alloc(out_ids, RILL_DTYPE_INT64, &d)) ||
      (st = rill_tensor_alloc(out_sc, dt, &d)))
    goto done;
  int64_t *oi = rill_tensor_ptr(out_ids);
  void *os = rill_tensor_ptr(out_sc);
  size_t w = 0;
  for (size_t s = 0; s < srcs; s++)
    for (size_t i = 0; i < nb; i++) {
      const bsd_sentence *x = &sent[s * nb + sorted[s * nb + i]];
      for (size_t k = x->len; k-- > 0; w++) {
        oi[w] = words[x->start + k];
        if (dt == RILL_DTYPE_FP32) ((float *)os)[w] = (float)wscore[x->start + k];
        else ((double *)os)[w] = wscore[x->start + k];
      }
    }
  if ((st = set_lod2(out_ids, l0, srcs + 1, l1, nsent + 1))) goto done;
  st = set_lod2(out_sc, l0, srcs + 1, l1, nsent + 1);
done:
  rill_free(sent);
  rill_free(prefix);
  rill_free(sorted);
  rill_free(nprefix);
  rill_free(words);
  rill_free(wscore);
  rill_free(rank);
  rill_free(l0);
  rill_free(l1);
  return st;
}

/* ---- gather_tree ---- */

#define GATHER_TREE(T, DT, NAME)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *ids, *par, *out;                                                         \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &ids));                                         \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &par));                                         \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    if (ids->dims.n != 3)                                                                 \
      return rill_kernel_error(ctx, "input Ids (%s) must be [T, batch, beam]",            \
                               rill_kin_name(ctx, 0, 0));                                 \
    RILL_TRY(rill_kin_check_dims(ctx, 1, par, &ids->dims));                               \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &ids->dims));                           \
    int64_t steps = ids->dims.d[0], batch = ids->dims.d[1], beam = ids->dims.d[2];        \
    const T *iv = rill_tensor_ptr(ids), *pv = rill_tensor_ptr(par);                       \
    T *ov = rill_tensor_ptr(out);                                                         \
    for (int64_t b = 0; b < batch && steps > 0; b++)                                      \
      for (int64_t k = 0; k < beam; k++) {                                                \
        int64_t at = ((steps - 1) * batch + b) * beam;                                    \
        ov[at + k] = iv[at + k];                                                          \
        int64_t p = (int64_t)pv[at + k];                                                  \
        for (int64_t t = steps - 2; t >= 0; t--) {                                        \
          if (p < 0 || p >= beam)                                                         \
            return rill_kernel_error(ctx, "input Parents (%s) holds %lld at step %lld, "  \
                                     "batch %lld: outside [0, %lld)",                     \
                                     rill_kin_name(ctx, 1, 0), (long long)p,              \
                                     (long long)(t + 1), (long long)b, (long long)beam);  \
          at = (t * batch + b) * beam;                                                    \
          ov[at + k] = iv[at + p];                                                        \
          p = (int64_t)pv[at + p];                                                        \
        }                                                                                 \
      }                                                                                   \
    return NULL;                                                                          \
  }

GATHER_TREE(int32_t, RILL_DTYPE_INT32, rill_cpu_gather_tree_int32)
GATHER_TREE(int64_t, RILL_DTYPE_INT64, rill_cpu_gather_tree_int64)
