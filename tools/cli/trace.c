/* rill trace summary TRACE.json [--svg OPS.svg]: time per op type from a profiler trace
 * (a table, and a bar chart written as SVG);
 * rill trace merge A.json B.json ... -o ALL.json: one timeline from the traces of
 * several processes, each file's timestamps shifted by the difference of its start's
 * wall-clock time (otherData.wall_start_ns) from the earliest one's.
 *
 * The traces are read with a small JSON reader of its own (objects, arrays, strings,
 * numbers, literals), enough for any trace-event file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ------------------------------------------------------------ JSON ---------- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
  jtype type;
  double num;
  bool b;
  char *str;          /* J_STR */
  struct jval *items; /* J_ARR, J_OBJ (values) */
  char **keys;        /* J_OBJ */
  size_t n, cap;
} jval;

typedef struct jparser {
  const char *s, *end;
  const char *err;
  int depth;
} jparser;

static void jfree(jval *v) {
  free(v->str);
  for (size_t i = 0; i < v->n; i++) {
    jfree(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  memset(v, 0, sizeof *v);
}

static void skip_ws(jparser *p) {
  while (p->s < p->end && (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t')) p->s++;
}

static bool parse_value(jparser *p, jval *out);

static bool parse_string(jparser *p, char **out) {
  if (p->s >= p->end || *p->s != '"') return p->err = "a string was expected", false;
  p->s++;
  size_t cap = 16, n = 0;
  char *buf = malloc(cap);
  if (!buf) return p->err = "out of memory", false;
  while (p->s < p->end && *p->s != '"') {
    char c = *p->s++;
    if (c == '\\') {
      if (p->s >= p->end) break;
      char e = *p->s++;
      switch (e) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': {
          /* \u00XX only (what writers emit for control bytes); others become '?' */
          unsigned v = 0;
          for (int i = 0; i < 4 && p->s < p->end; i++, p->s++) {
            char h = *p->s;
            v = v * 16 + (unsigned)(h >= 'a' ? h - 'a' + 10 : h >= 'A' ? h - 'A' + 10 : h - '0');
          }
          c = v < 0x80 ? (char)v : '?';
          break;
        }
        default: c = e;
      }
    }
    if (n + 2 > cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        return p->err = "out of memory", false;
      }
      buf = nb;
    }
    buf[n++] = c;
  }
  if (p->s >= p->end) {
    free(buf);
    return p->err = "an unterminated string", false;
  }
  p->s++;
  buf[n] = '\0';
  *out = buf;
  return true;
}

static bool push_item(jparser *p, jval *v, char *key) {
  if (v->n == v->cap) {
    size_t nc = v->cap ? v->cap * 2 : 8;
    jval *ni = realloc(v->items, nc * sizeof *ni);
    if (!ni) return p->err = "out of memory", false;
    v->items = ni;
    if (v->type == J_OBJ) {
      char **nk = realloc(v->keys, nc * sizeof *nk);
      if (!nk) return p->err = "out of memory", false;
      v->keys = nk;
    }
    v->cap = nc;
  }
  memset(&v->items[v->n], 0, sizeof *v->items);
  if (v->type == J_OBJ) v->keys[v->n] = key;
  v->n++;
  return true;
}

static bool parse_container(jparser *p, jval *out, char close) {
  out->type = close == '}' ? J_OBJ : J_ARR;
  p->s++;
  if (++p->depth > 64) return p->err = "nesting too deep", false;
  skip_ws(p);
  if (p->s < p->end && *p->s == close) {
    p->s++;
    p->depth--;
    return true;
  }
  for (;;) {
    char *key = NULL;
    skip_ws(p);
    if (out->type == J_OBJ) {
      if (!parse_string(p, &key)) return false;
      skip_ws(p);
      if (p->s >= p->end || *p->s != ':') {
        free(key);
        return p->err = "':' was expected", false;
      }
      p->s++;
    }
    if (!push_item(p, out, key)) {
      free(key);
      return false;
    }
    if (!parse_value(p, &out->items[out->n - 1])) return false;
    skip_ws(p);
    if (p->s < p->end && *p->s == ',') {
      p->s++;
      continue;
    }
    if (p->s < p->end && *p->s == close) {
      p->s++;
      p->depth--;
      return true;
    }
    return p->err = close == '}' ? "',' or '}' was expected" : "',' or ']' was expected", false;
  }
}

static bool parse_value(jparser *p, jval *out) {
  skip_ws(p);
  if (p->s >= p->end) return p->err = "unexpected end of file", false;
  char c = *p->s;
  if (c == '{') return parse_container(p, out, '}');
  if (c == '[') return parse_container(p, out, ']');
  if (c == '"') {
    out->type = J_STR;
    return parse_string(p, &out->str);
  }
  static const struct {
    const char *word;
    jtype type;
    bool b;
  } lits[] = {{"true", J_BOOL, true}, {"false", J_BOOL, false}, {"null", J_NULL, false}};
  for (size_t i = 0; i < 3; i++) {
    size_t len = strlen(lits[i].word);
    if ((size_t)(p->end - p->s) >= len && !strncmp(p->s, lits[i].word, len)) {
      out->type = lits[i].type;
      out->b = lits[i].b;
      p->s += len;
      return true;
    }
  }
  char *endp;
  errno = 0;
  out->num = strtod(p->s, &endp);
  if (endp == p->s || endp > p->end) return p->err = "a value was expected", false;
  out->type = J_NUM;
  p->s = endp;
  return true;
}

static const jval *jget(const jval *obj, const char *key) {
  if (!obj || obj->type != J_OBJ) return NULL;
  for (size_t i = 0; i < obj->n; i++)
    if (!strcmp(obj->keys[i], key)) return &obj->items[i];
  return NULL;
}

static const char *jstr(const jval *obj, const char *key) {
  const jval *v = jget(obj, key);
  return v && v->type == J_STR ? v->str : NULL;
}

static void jwrite_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void jwrite(FILE *f, const jval *v) {
  switch (v->type) {
    case J_NULL: fputs("null", f); break;
    case J_BOOL: fputs(v->b ? "true" : "false", f); break;
    case J_NUM: fprintf(f, "%.15g", v->num); break;
    case J_STR: jwrite_str(f, v->str); break;
    default:
      fputc(v->type == J_OBJ ? '{' : '[', f);
      for (size_t i = 0; i < v->n; i++) {
        if (i) fputc(',', f);
        if (v->type == J_OBJ) {
          jwrite_str(f, v->keys[i]);
          fputc(':', f);
        }
        jwrite(f, &v->items[i]);
      }
      fputc(v->type == J_OBJ ? '}' : ']', f);
  }
}

/* Reads a trace file: an object with a "traceEvents" array. */
static rill_status *load_trace(const char *path, jval *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return rill_status_create(RILL_IO, "%s: cannot open the trace: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
      }
      buf = nb;
    }
  }
  bool bad = ferror(f) != 0;
  fclose(f);
  if (!buf) return cli_oom();
  if (bad) {
    free(buf);
    return rill_status_create(RILL_IO, "%s: cannot read the trace", path);
  }
  jparser p = {buf, buf + n, NULL, 0};
  memset(out, 0, sizeof *out);
  bool ok = parse_value(&p, out);
  if (ok) {
    skip_ws(&p);
    if (p.s != p.end) ok = false, p.err = "text after the end of the JSON value";
  }
  size_t at = (size_t)(p.s - buf);
  free(buf);
  if (!ok) {
    jfree(out);
    return rill_status_create(RILL_INVALID_ARGUMENT, "%s: not JSON at byte %zu: %s", path, at, p.err);
  }
  const jval *ev = jget(out, "traceEvents");
  if (!ev || ev->type != J_ARR) {
    jfree(out);
    return rill_status_create(RILL_INVALID_ARGUMENT,
                              "%s: not a trace-event file (no \"traceEvents\" array)", path);
  }
  return NULL;
}

/* ------------------------------------------------------------ summary ------- */

typedef struct op_total {
  char *name;
  long calls;
  double total, min, max; /* us */
} op_total;

static int cmp_total(const void *a, const void *b) {
  const op_total *x = a, *y = b;
  return x->total > y->total ? -1 : x->total < y->total ? 1 : strcmp(x->name, y->name);
}

static rill_status *write_svg(const char *path, const op_total *t, size_t n) {
  size_t len = 0;
  char *text = NULL;
  FILE *f = open_memstream(&text, &len);
  if (!f) return cli_oom();
  double top = n ? t[0].total : 1;
  if (top <= 0) top = 1;
  int row = 22, left = 180, width = 520, h = (int)n * row + 50;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "font-family=\"sans-serif\" font-size=\"12\">\n", left + width + 140, h);
  fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\">time per op type (ms, all threads)</text>\n");
  for (size_t i = 0; i < n; i++) {
    int y = 34 + (int)i * row;
    double w = t[i].total / top * width;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", left - 6, y + 13);
    for (const char *c = t[i].name; *c; c++) {
      if (*c == '<') fputs("&lt;", f);
      else if (*c == '&') fputs("&amp;", f);
      else if (*c == '>') fputs("&gt;", f);
      else fputc(*c, f);
    }
    fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#4a7ab7\"/>\n",
            left, y, w < 1 ? 1 : w, row - 6);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.4g (%ld calls)</text>\n", left + (w < 1 ? 1 : w) + 6,
            y + 13, t[i].total * 1e-3, t[i].calls);
  }
  fputs("</svg>\n", f);
  if (fclose(f)) {
    free(text);
    return cli_oom();
  }
  rill_status *st = write_file(path, text, len);
  free(text);
  return st;
}

static int trace_summary(int argc, char **argv) {
  const char *in = NULL, *svg = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--svg")) {
      if (i + 1 >= argc) return usage_error("%s needs a file", "--svg");
      svg = argv[++i];
    } else if (argv[i][0] == '-') {
      return usage_error("unknown option %s", argv[i]);
    } else if (!in) {
      in = argv[i];
    } else {
      return usage_error("unexpected argument %s", argv[i]);
    }
  }
  if (!in) return usage_error("trace summary needs a TRACE.json%s", "");
  jval root;
  rill_status *st = load_trace(in, &root);
  if (st) return fail(st);
  const jval *ev = jget(&root, "traceEvents");
  op_total *t = NULL;
  size_t n = 0;
  for (size_t i = 0; i < ev->n && !st; i++) {
    const jval *e = &ev->items[i];
    const char *ph = jstr(e, "ph"), *cat = jstr(e, "cat"), *name = jstr(e, "name");
    const jval *dur = jget(e, "dur");
    if (!ph || strcmp(ph, "X") || !cat || strcmp(cat, "op") || !name || !dur || dur->type != J_NUM)
      continue;
    size_t k = 0;
    while (k < n && strcmp(t[k].name, name)) k++;
    if (k == n) {
      op_total *nt = realloc(t, (n + 1) * sizeof *nt);
      if (!nt || !(nt[n].name = strdup(name))) {
        if (nt) t = nt;
        st = cli_oom();
        break;
      }
      t = nt;
      t[n] = (op_total){t[n].name, 0, 0, dur->num, dur->num};
      n++;
    }
    t[k].calls++;
    t[k].total += dur->num;
    if (dur->num < t[k].min) t[k].min = dur->num;
    if (dur->num > t[k].max) t[k].max = dur->num;
  }
  if (!st) {
    qsort(t, n, sizeof *t, cmp_total);
    double all = 0;
    for (size_t k = 0; k < n; k++) all += t[k].total;
    printf("%-32s%-10s%-14s%-14s%-14s%-14s%s\n", "Event", "Calls", "Total (ms)", "Min.", "Max.",
           "Ave.", "Ratio.");
    for (size_t k = 0; k < n; k++)
      printf("%-32s%-10ld%-14.6g%-14.6g%-14.6g%-14.6g%.4f\n", t[k].name, t[k].calls,
             t[k].total * 1e-3, t[k].min * 1e-3, t[k].max * 1e-3,
             t[k].total * 1e-3 / (double)t[k].calls, all > 0 ? t[k].total / all : 0);
    if (svg && !(st = write_svg(svg, t, n))) printf("wrote %s\n", svg);
  }
  for (size_t k = 0; k < n; k++) free(t[k].name);
  free(t);
  jfree(&root);
  return st ? fail(st) : EXIT_OK;
}

/* ------------------------------------------------------------ merge --------- */

static int trace_merge(int argc, char **argv) {
  const char *out = NULL;
  const char **in = calloc((size_t)argc + 1, sizeof *in);
  size_t nin = 0;
  if (!in) return fail(cli_oom());
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
      if (i + 1 >= argc) {
        free(in);
        return usage_error("%s needs a file", argv[i]);
      }
      out = argv[++i];
    } else if (argv[i][0] == '-') {
      free(in);
      return usage_error("unknown option %s", argv[i]);
    } else {
      in[nin++] = argv[i];
    }
  }
  if (!out || nin < 1) {
    free(in);
    return usage_error("trace merge needs TRACE.json files and -o OUT.json%s", "");
  }
  jval *roots = calloc(nin, sizeof *roots);
  double *wall = calloc(nin, sizeof *wall);
  rill_status *st = roots && wall ? NULL : cli_oom();
  size_t loaded = 0;
  double earliest = 0;
  for (; loaded < nin && !st; loaded++) {
    if ((st = load_trace(in[loaded], &roots[loaded]))) break;
    const jval *w = jget(jget(&roots[loaded], "otherData"), "wall_start_ns");
    if (!w || w->type != J_NUM) {
      st = rill_status_create(RILL_INVALID_ARGUMENT,
                              "%s: no otherData.wall_start_ns (not written by rill's profiler): "
                              "cannot align it",
                              in[loaded]);
      loaded++;
      break;
    }
    wall[loaded] = w->num;
    if (!loaded || w->num < earliest) earliest = w->num;
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = NULL;
  if (!st && !(f = open_memstream(&text, &len))) st = cli_oom();
  if (!st) {
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"wall_start_ns\":%.0f,\"merged\":[",
            earliest);
    for (size_t k = 0; k < nin; k++) {
      if (k) fputc(',', f);
      fprintf(f, "{\"file\":");
      jwrite_str(f, in[k]);
      fprintf(f, ",\"shift_us\":%.3f}", (wall[k] - earliest) * 1e-3);
    }
    fprintf(f, "]},\n\"traceEvents\":[");
    bool first = true;
    /* pids seen in earlier files: a repeated pid (another host, or a later session of
     * one process) is renumbered so each file stays its own process */
    double *pids = NULL;
    size_t npids = 0;
    for (size_t k = 0; k < nin && !st; k++) {
      jval *ev = (jval *)jget(&roots[k], "traceEvents");
      double shift = (wall[k] - earliest) * 1e-3, remap_from = -1, remap_to = -1;
      for (size_t i = 0; i < ev->n; i++) {
        jval *e = &ev->items[i];
        jval *pid = (jval *)jget(e, "pid"), *ts = (jval *)jget(e, "ts");
        if (pid && pid->type == J_NUM) {
          if (pid->num == remap_from) {
            pid->num = remap_to;
          } else if (remap_from < 0) {
            bool seen = false;
            for (size_t q = 0; q < npids; q++) seen |= pids[q] == pid->num;
            double *np = realloc(pids, (npids + 2) * sizeof *np);
            if (!np) {
              st = cli_oom();
              break;
            }
            pids = np;
            remap_from = pid->num;
            remap_to = pid->num;
            if (seen) {
              for (size_t q = 0; q < npids; q++)
                if (pids[q] >= remap_to) remap_to = pids[q] + 1;
            }
            pids[npids++] = remap_to;
            pid->num = remap_to;
          }
        }
        if (ts && ts->type == J_NUM) ts->num += shift;
        if (!first) fputs(",\n", f);
        first = false;
        jwrite(f, e);
      }
    }
    free(pids);
    fputs("\n]}\n", f);
    if (fclose(f) && !st) st = cli_oom();
    if (!st) st = write_file(out, text, len);
    if (!st) printf("wrote %s (%zu traces)\n", out, nin);
  }
  free(text);
  for (size_t k = 0; k < loaded && roots; k++) jfree(&roots[k]);
  free(roots);
  free(wall);
  free(in);
  return st ? fail(st) : EXIT_OK;
}

int cmd_trace(int argc, char **argv) {
  if (argc < 1) return usage_error("trace needs summary or merge%s", "");
  if (!strcmp(argv[0], "summary")) return trace_summary(argc - 1, argv + 1);
  if (!strcmp(argv[0], "merge")) return trace_merge(argc - 1, argv + 1);
  return usage_error("unknown trace command '%s' (summary, merge)", argv[0]);
}
