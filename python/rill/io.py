"""Saving and loading (Fluid 1.x's fluid.io) in Paddle's layouts (FORMATS.md section 3):
one tensor-stream file per variable, or one combined file in sorted name order; an
inference model is a pruned program with feed/fetch ops in `__model__` plus its
persistable variables. Files are written crash-safely by C."""

import ctypes
import os

from . import core, proto
from .core import error_class
from .executor import global_scope, Scope
from .framework import Program, Variable, Parameter, default_main_program, program_guard
from . import layers

__all__ = ['save_vars', 'save_params', 'save_persistables', 'load_vars', 'load_params',
           'load_persistables', 'save_inference_model', 'load_inference_model',
           'is_parameter', 'is_persistable']

_NOT_SAVED = (proto.FEED_MINIBATCH, proto.FETCH_LIST, proto.RAW, 15)


def is_parameter(var):
    return isinstance(var, Parameter) or bool(var.desc.get('is_parameter'))


def is_persistable(var):
    return bool(var.persistable) and var.type not in _NOT_SAVED


def _select(program, vars, predicate):
    program = program or default_main_program()
    if vars is None:
        vars = [v for v in program.global_block().vars.values() if predicate(v)]
    names = sorted(set(v.name if isinstance(v, Variable) else v for v in vars))
    return program, names


def _scope(executor):
    return global_scope()


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None):
    """Saves `vars` (or the variables of main_program's global block that satisfy
    `predicate`) from the global scope into `dirname`."""
    program, names = _select(main_program, vars, predicate or is_persistable)
    os.makedirs(dirname, exist_ok=True)
    program._c().save_vars(_scope(executor)._c, dirname, names, filename)


def save_params(executor, dirname, main_program=None, filename=None):
    save_vars(executor, dirname, main_program, None, is_parameter, filename)


def save_persistables(executor, dirname, main_program=None, filename=None):
    save_vars(executor, dirname, main_program, None, is_persistable, filename)


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None):
    """Loads what save_vars wrote into the global scope; every stored tensor must match
    its declaration, and nothing is changed when a file is missing or wrong."""
    program, names = _select(main_program, vars, predicate or is_persistable)
    if not os.path.isdir(dirname):
        raise error_class('NOT_FOUND')("load_vars: no such directory '%s'" % dirname)
    program._c().load_vars(_scope(executor)._c, dirname, names, filename)


def load_params(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, None, is_parameter, filename)


def load_persistables(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, None, is_persistable, filename)


def _inference_program(feeded_var_names, target_vars, main_program):
    """The program save_inference_model writes: targets wrapped in scale(x, 1.0) named
    save_infer_model/scale_i, pruned (C), with feed ops (col = position in
    feeded_var_names, prepended so they appear in reverse) and fetch ops."""
    main_program = main_program or default_main_program()
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    if not target_vars:
        raise ValueError('save_inference_model: target_vars is empty')
    blk = main_program.global_block()
    for n in feeded_var_names:
        if not isinstance(n, str):
            raise TypeError('save_inference_model: feeded_var_names must be names, got %r' % (n,))
        if not blk.has_var(n):
            raise error_class('NOT_FOUND')(
                "save_inference_model: feed '%s' is not a variable of the program" % n)
    for t in target_vars:
        if not isinstance(t, Variable):
            raise TypeError('save_inference_model: target_vars must be Variables, got %r' % (t,))
    test = main_program.clone(for_test=True)
    names = []
    with program_guard(test):
        for i, t in enumerate(target_vars):
            out = layers.scale(test.global_block().var(t.name), 1.0,
                               name='save_infer_model/scale_%d' % i)
            names.append(out.name)
    pruned = test._prune(list(feeded_var_names), names)
    b = pruned.global_block()
    feed = b.create_var(name='feed', type=proto.FEED_MINIBATCH, persistable=True)
    fetch = b.create_var(name='fetch', type=proto.FETCH_LIST, persistable=True)
    for i, n in enumerate(feeded_var_names):
        b._prepend_op('feed', inputs={'X': feed}, outputs={'Out': n}, attrs={'col': i})
    for i, n in enumerate(names):
        b.append_op('fetch', inputs={'X': n}, outputs={'Out': fetch}, attrs={'col': i},
                    infer_shape=False)
    return pruned, names


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False):
    """Writes `dirname/__model__` (or model_filename) and the persistable variables the
    pruned program needs (one file each, or params_filename). Returns the fetch names."""
    model_filename = model_filename or '__model__'
    parts = model_filename.replace(os.sep, '/').split('/')
    if os.path.isabs(model_filename) or any(p in ('', '.', '..') for p in parts):
        raise error_class('INVALID_ARGUMENT')(
            "save_inference_model: model_filename '%s' must be a relative name inside '%s'"
            % (model_filename, dirname))
    program, names = _inference_program(feeded_var_names, target_vars, main_program)
    os.makedirs(dirname, exist_ok=True)
    model_path = os.path.join(dirname, model_filename)
    os.makedirs(os.path.dirname(model_path), exist_ok=True)
    program._c().save(model_path)
    if not program_only:
        save_persistables(executor, dirname, program, params_filename)
    return names


def load_inference_model(dirname, executor, model_filename=None, params_filename=None,
                         pserver_endpoints=None):
    """Loads a model directory saved by rill or Paddle (1.x dir with one file per
    variable or a combined file, a `__model__` path, a 2.x .pdmodel path or prefix).
    The parameters go into the global scope. Returns [program, feed_target_names,
    fetch_targets] with feeds and fetches in `col` order."""
    path = dirname if model_filename is None else os.path.join(dirname, model_filename)
    model = core.CModel(path, params_filename)
    program = Program.parse_from_string(model.program_bytes())
    mscope = core.CScope.wrap(model.scope_handle(), model)
    gscope = global_scope()._c
    for v in program.global_block().vars.values():
        if is_persistable(v):
            try:
                t = mscope.get_tensor(v.name)
            except error_class('NOT_FOUND'):
                continue
            gscope.set_tensor(v.name, t)
    feeds = [model.input_name(i) for i in range(model.num_inputs())]
    blk = program.global_block()
    fetches = [blk.var(model.output_name(i)) for i in range(model.num_outputs())]
    return [program, feeds, fetches]
