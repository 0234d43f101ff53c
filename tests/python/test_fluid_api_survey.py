"""doc/design/fluid_api.md lists every public name of paddle.fluid 1.8 (and paddle.batch,
paddle.reader, paddle.dataset) with rill's status. These tests hold the table to the
package: a `done` name must exist in its rill module and be of the kind Paddle's is, a
`missing` name must not exist, so the table cannot go stale."""
import importlib
import inspect
import os
import re
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, 'doc', 'design', 'fluid_api.md')
STATUSES = ('done', 'missing', 'out of scope')

ROW = re.compile(r'^\| `([A-Za-z_][A-Za-z0-9_]*)` \| (\w+) \| (done|missing|out of scope) \|(.*)\|$')
SECTION = re.compile(r'^## (.+)$')
MODULE = re.compile(r'^rill: `([\w.]+)` — (\d+) done, (\d+) missing, (\d+) out of scope$')
TOTALS = re.compile(r'^\*\*(\d+) names: (\d+) done, (\d+) missing, (\d+) out of scope\.\*\*$')


def parse(path=DOC):
    """[(section title, rill module, stated counts, [(name, kind, status, note, line)])]
    and the stated totals."""
    sections, totals = [], None
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip('\n')
            m = TOTALS.match(line)
            if m and totals is None:
                totals = tuple(int(x) for x in m.groups())
                continue
            m = SECTION.match(line)
            if m:
                sections.append([m.group(1), None, None, []])
                continue
            m = MODULE.match(line)
            if m and sections and sections[-1][1] is None:
                sections[-1][1] = m.group(1)
                sections[-1][2] = tuple(int(x) for x in m.groups()[1:])
                continue
            if line.startswith('| `'):
                m = ROW.match(line)
                assert m, '%s:%d: a table row must read "| `name` | kind | status | note |" ' \
                    'with status one of %s: %r' % (DOC, lineno, STATUSES, line)
                assert sections and sections[-1][1], \
                    '%s:%d: row before any "rill: `module`" line' % (DOC, lineno)
                name, kind, status, note = m.groups()
                sections[-1][3].append((name, kind, status, note.strip(), lineno))
    return sections, totals


SECTIONS, TOTALS_STATED = parse()


def _rill_module(name):
    """The module (or namespace object, as `rill.unique_name`) called `name`, or None."""
    try:
        return importlib.import_module(name)
    except ImportError:
        pass
    parent, _, attr = name.rpartition('.')
    outer = _rill_module(parent) if parent else None
    return getattr(outer, attr, None)


def _usable(obj, kind):
    if kind == 'class':
        return inspect.isclass(obj)
    if kind == 'function':
        return callable(obj)
    if kind == 'module':
        # a module, or an object standing for one (rill.unique_name)
        return isinstance(obj, types.ModuleType) or not callable(obj)
    return True


def test_the_table_parses_and_covers_the_fluid_modules():
    titles = [s[0] for s in SECTIONS]
    for want in ('paddle.fluid', 'paddle.fluid.layers (nn.py)', 'paddle.fluid.io',
                 'paddle.fluid.optimizer', 'paddle.fluid.metrics', 'paddle.reader',
                 'paddle.dataset.mnist'):
        assert want in titles, '%s: no section "## %s"' % (DOC, want)
    assert sum(len(s[3]) for s in SECTIONS) > 600
    for title, module, _, rows in SECTIONS:
        names = [r[0] for r in rows]
        assert len(names) == len(set(names)), '%s: section %s lists a name twice' % (DOC, title)


def test_counts_stated_match_the_rows():
    errors = []
    grand = [0, 0, 0]
    for title, module, stated, rows in SECTIONS:
        counted = tuple(sum(1 for r in rows if r[2] == s) for s in STATUSES)
        grand = [a + b for a, b in zip(grand, counted)]
        if counted != stated:
            errors.append('section "%s": the line under the heading should read '
                          '"rill: `%s` — %d done, %d missing, %d out of scope"'
                          % ((title, module) + counted))
    want = (sum(grand),) + tuple(grand)
    if TOTALS_STATED != want:
        errors.append('the totals at the top should read "**%d names: %d done, %d missing, '
                      '%d out of scope.**"' % want)
    assert not errors, '%s:\n  ' % DOC + '\n  '.join(errors)


def test_out_of_scope_rows_give_a_reason():
    bare = ['%s:%d `%s` (section %s)' % (DOC, r[4], r[0], t)
            for t, _, _, rows in SECTIONS for r in rows if r[2] == 'out of scope' and not r[3]]
    assert not bare, 'out-of-scope rows need a reason in the note column:\n  ' + \
        '\n  '.join(bare)


def stale_rows(sections, doc=DOC):
    """One message per row the package contradicts, naming the row and the fix."""
    errors = []
    for title, module_name, _, rows in sections:
        module = _rill_module(module_name)
        for name, kind, status, _, lineno in rows:
            where = '%s:%d (section "%s", row `%s`)' % (doc, lineno, title, name)
            present = module is not None and hasattr(module, name)
            if status == 'done' and not present:
                errors.append('%s: %s.%s does not exist; change its status to "missing"'
                              % (where, module_name, name))
            elif status == 'done' and not _usable(getattr(module, name), kind):
                errors.append('%s: %s.%s is %r, not a %s as in Paddle; fix it or change '
                              'its status to "missing"'
                              % (where, module_name, name, type(getattr(module, name)), kind))
            elif status == 'missing' and present:
                errors.append('%s: %s.%s exists now; change its status to "done" (and the '
                              'counts)' % (where, module_name, name))
    return errors


def test_done_rows_exist_and_missing_rows_do_not():
    errors = stale_rows(SECTIONS)
    assert not errors, '\n'.join(errors)


def test_the_checks_catch_a_stale_row(tmp_path):
    """A table claiming a missing name is done, or an existing name is missing, is
    found out."""
    doc = tmp_path / 'fluid_api.md'
    doc.write_text('**2 names: 1 done, 1 missing, 0 out of scope.**\n\n## paddle.fluid\n\n'
                   'rill: `rill` — 1 done, 1 missing, 0 out of scope\n\n'
                   '| name | kind | status | note |\n|---|---|---|---|\n'
                   '| `no_such_layer_xyz` | function | done | |\n'
                   '| `Executor` | class | missing | |\n', encoding='utf-8')
    sections, totals = parse(str(doc))
    assert totals == (2, 1, 1, 0)
    errors = stale_rows(sections, str(doc))
    assert len(errors) == 2
    assert 'row `no_such_layer_xyz`' in errors[0] and 'change its status to "missing"' in errors[0]
    assert 'row `Executor`' in errors[1] and 'change its status to "done"' in errors[1]
