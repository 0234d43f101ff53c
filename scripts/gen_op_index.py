#!/usr/bin/env python3
"""Names for the positions in every op schema's tables.

Reads operators/<op>.c through the C preprocessor (so tables and schemas written with
macros are seen as the compiler sees them), finds each `rill_op_schema rill_schema_<op>`
and the slot and attribute tables it points to, and writes one header with, per op:

    RILL_<OP>_IN_<SLOT>, RILL_<OP>_IN_COUNT      input slot positions
    RILL_<OP>_OUT_<SLOT>, RILL_<OP>_OUT_COUNT    output slot positions
    RILL_<OP>_ATTR_<NAME>, RILL_<OP>_ATTR_COUNT  attribute positions

plus, per source file, RILL_OP_TABLE_CHECKS_<file>: static assertions that the tables
the schemas point to have the counts above. Every operators/<op>.c that defines a schema
must end with RILL_OP_TABLE_CHECKS(<file>) (operators/op_index.h).

Names: upper case; CamelCase slot names split at word boundaries (ParamOut -> PARAM_OUT,
XShape -> X_SHAPE); "@" and any other non-identifier character become "_"
(X@GRAD -> X_GRAD).

usage: gen_op_index.py OUTPUT CC [-I...] [-D...] -- SOURCES...
"""
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

TABLE_RE = re.compile(r"\b(static\s+)?const\s+rill_(attr|slot)_schema\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*\{")
SCHEMA_RE = re.compile(r"\brill_op_schema\s+rill_schema_(\w+)\s*=\s*\{")
STRING_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')


class GenError(Exception):
    pass


def skip_string(text, i):
    """text[i] is '"' or "'": index just past the literal."""
    q = text[i]
    i += 1
    while text[i] != q:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def braced(text, start):
    """text[start] is '{': (body without the outer braces, index past the '}')."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = skip_string(text, i)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1:i], i + 1
        i += 1
    raise GenError("unbalanced braces")


def enum_values(text):
    """Constants of the plain enums in text (`A, B = 5, C`) with their values."""
    values = {}
    for m in re.finditer(r"\benum\s*\w*\s*\{([^{}]*)\}", text):
        nxt = 0
        for item in m.group(1).split(","):
            item = item.strip()
            if not item:
                continue
            name, _, val = item.partition("=")
            name = name.strip()
            if val.strip():
                try:
                    nxt = int(val.strip(), 0)
                except ValueError:
                    nxt = None
            if nxt is not None:
                values[name] = nxt
                nxt += 1
    return values


def entries(body, enums):
    """Names (first string literal) of the top-level {...} entries of a table body, by
    position; entries may be placed with designators naming enum constants."""
    placed = {}
    pos = 0
    i = 0
    while i < len(body):
        c = body[i]
        if c in "\"'":
            i = skip_string(body, i)
        elif c == "[":
            j = body.index("]", i)
            d = body[i + 1:j].strip()
            if re.fullmatch(r"\d+", d):
                pos = int(d)
            elif d in enums:
                pos = enums[d]
            else:
                raise GenError("designator [%s] is no constant of a plain enum" % d)
            i = j + 1
        elif c == "{":
            inner, i = braced(body, i)
            m = STRING_RE.search(inner)
            if not m:
                raise GenError("table entry without a name: {%s}" % inner.strip()[:60])
            if pos in placed:
                raise GenError("two entries at position %d" % pos)
            placed[pos] = m.group(1)
            pos += 1
        else:
            i += 1
    names = [placed.get(k) for k in range(len(placed))]
    if None in names:
        raise GenError("the entries leave a gap")
    return names


def ident(name):
    """A slot or attribute name as an upper-case identifier part."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z])([A-Z][a-z])", r"\1_\2", s)
    s = re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").upper()
    if not s:
        raise GenError("name %r gives no identifier" % name)
    return s


def field(body, name):
    m = re.search(r"\.%s\s*=\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+|\w+)" % name, body)
    if not m:
        return None
    v = m.group(1)
    if v.startswith('"'):
        return "".join(STRING_RE.findall(v))
    return v


def scan(cc_args, path):
    cmd = cc_args + ["-E", "-P", "-DRILL_OP_INDEX_GENERATING", path]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        raise GenError("%s: preprocessor failed:\n%s" % (path, res.stderr))
    text = res.stdout
    tables = {}
    enums = enum_values(text)
    for m in TABLE_RE.finditer(text):
        body, _ = braced(text, m.end() - 1)
        try:
            tables[m.group(3)] = (bool(m.group(1)), entries(body, enums))
        except GenError as e:
            raise GenError("%s: table %s: %s" % (path, m.group(3), e))
    schemas = []
    for m in SCHEMA_RE.finditer(text):
        body, _ = braced(text, m.end() - 1)
        sym = m.group(1)
        op = field(body, "type")
        if op is None:
            raise GenError("%s: rill_schema_%s has no .type" % (path, sym))
        refs = {}
        for kind, fld in (("IN", "inputs"), ("OUT", "outputs"), ("ATTR", "attrs")):
            t = field(body, fld)
            refs[kind] = None if t in (None, "NULL", "0") else t
        schemas.append((op, refs))
    return path, tables, schemas


def main(argv):
    out = argv[1]
    sep = argv.index("--")
    cc_args = argv[2:sep]
    sources = sorted(argv[sep + 1:])
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        scanned = list(pool.map(lambda p: scan(cc_args, p), sources))

    lines = [
        "/* Generated by scripts/gen_op_index.py from the op schemas in operators/;",
        " * do not edit. Positions of every op's input slots, output slots and",
        " * attributes (operators/op_index.h). */",
        "#ifndef RILL_OP_INDEX_GEN_H",
        "#define RILL_OP_INDEX_GEN_H",
        "",
    ]
    shared = {}  # tables defined without `static`, visible to every file
    for path, tables, _ in scanned:
        for t, (is_static, names) in tables.items():
            if not is_static:
                shared[t] = names
    seen = {}
    checks = []
    for path, tables, schemas in scanned:
        stem = os.path.splitext(os.path.basename(path))[0]
        if not schemas:
            continue
        with open(path, encoding="utf-8") as f:
            if "RILL_OP_TABLE_CHECKS(%s)" % stem not in f.read():
                raise GenError("%s: defines op schemas but lacks RILL_OP_TABLE_CHECKS(%s) "
                               "after its tables (operators/op_index.h)"
                               % (path, stem))
        asserts = []
        for op, refs in schemas:
            if op in seen:
                raise GenError("%s: op %s already defined in %s" % (path, op, seen[op]))
            seen[op] = path
            prefix = "RILL_%s" % ident(op)
            rel = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
            lines.append("/* %s (%s) */" % (op, rel))
            lines.append("enum {")
            for kind in ("IN", "OUT", "ATTR"):
                t = refs[kind]
                if t is None:
                    names = []
                elif t in tables:
                    names = tables[t][1]
                elif t in shared:
                    names = shared[t]
                else:
                    raise GenError("%s: op %s points to table %s, defined nowhere in "
                                   "operators/<op>.c" % (path, op, t))
                used = {}
                for i, n in enumerate(names):
                    # A slot or attribute called "count" would take the name of the
                    # table's length: it is named <..>_COUNT_SLOT instead.
                    word = ident(n) if ident(n) != "COUNT" else "COUNT_SLOT"
                    e = "%s_%s_%s" % (prefix, kind, word)
                    if e in used:
                        raise GenError("%s: op %s: %s names %r and %r both give %s"
                                       % (path, op, kind, used.get(e, n), n, e))
                    used[e] = n
                    lines.append("  %s = %d," % (e, i))
                lines.append("  %s_%s_COUNT = %d," % (prefix, kind, len(names)))
                if t:
                    asserts.append(
                        "_Static_assert(RILL_COUNTOF(%s) == %s_%s_COUNT, \"%s: %s[] does not "
                        "match the generated rill_op_index.gen.h\");" % (t, prefix, kind, op, t))
            lines.append("};")
            lines.append("")
        checks.append("#define RILL_OP_TABLE_CHECKS_%s \\\n  %s \\\n  _Static_assert(1, \"\")"
                      % (stem, " \\\n  ".join(asserts)))
    lines.extend(checks)
    lines.append("")
    lines.append("#endif")
    text = "\n".join(lines) + "\n"
    old = None
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            old = f.read()
    if old != text:
        tmp = out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, out)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except GenError as e:
        sys.stderr.write("gen_op_index.py: %s\n" % e)
        sys.exit(1)
