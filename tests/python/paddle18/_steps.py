"""Shared by the step-by-step training records (gen_static_rnn.py, gen_dynamic_rnn.py,
gen_dynamic_rnn_nested.py) and the tests that replay them: the generator's module `gen`
gives build(fluid), data(), feed_of(fluid, batch), OUT, PARAMS and FETCH; expected.npz
holds `param_<p>`, each batch's feeds as `<name>_<step>`, `loss_<step>`, `<fetch>_<step>`
and `final_<p>`. Also the inputs the DynamicRNN records' programs share."""
import os

import numpy as np


def record(gen):
    """Run under PaddlePaddle 1.8.5: trains on gen.data() and writes gen.OUT/expected.npz."""
    import paddle.fluid as fluid
    prog, startup, loss = gen.build(fluid)
    params, batches = gen.data()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.global_scope()
    set_up(fluid, exe, scope, startup, params)
    out = {'param_' + k: v for k, v in params.items()}
    for step, batch in enumerate(batches):
        for k, v in batch.items():
            out['%s_%d' % (k, step)] = v
        res = exe.run(prog, feed=gen.feed_of(fluid, batch),
                      fetch_list=[loss] + list(gen.FETCH), return_numpy=False)
        out['loss_%d' % step] = np.array(res[0])
        for name, v in zip(gen.FETCH, res[1:]):
            out['%s_%d' % (name, step)] = np.array(v)
    for k in gen.PARAMS:
        out['final_' + k] = np.array(scope.find_var(k).get_tensor())
    os.makedirs(gen.OUT, exist_ok=True)
    np.savez(os.path.join(gen.OUT, 'expected.npz'), **out)


def load(gen):
    return np.load(os.path.join(gen.OUT, 'expected.npz'))


def set_up(fluid, exe, scope, startup, params):
    """Runs startup in `scope`, then sets the starting parameters ({name: array})."""
    exe.run(startup)
    for k, v in params.items():
        scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())


def start(fluid, gen, ref, scope, exe, startup):
    """Runs startup, then sets the recorded starting parameters."""
    set_up(fluid, exe, scope, startup, {k: ref['param_' + k] for k in gen.PARAMS})


def dynamic_rnn_inputs(fluid, d, h, x_lod, s_lod):
    """The fed inputs of the DynamicRNN records, all with gradients: x [-1, d] of
    `x_lod` LoD levels (the step input), h0 [-1, h] (the first state) and s [-1, h] of
    `s_lod` levels (the static input)."""
    x = fluid.data('x', [-1, d], 'float32', lod_level=x_lod)
    h0 = fluid.data('h0', [-1, h], 'float32')
    s = fluid.data('s', [-1, h], 'float32', lod_level=s_lod)
    for v in (x, h0, s):
        v.stop_gradient = False
    return x, h0, s


def dynamic_rnn_steps(rnn, x, h0, s):
    """Inside rnn.block(): the step's rows of x, s cut to the running sequences, and the
    state memory started from h0 (reordered by rank)."""
    return rnn.step_input(x), rnn.static_input(s), rnn.memory(init=h0, need_reorder=True)


def lod_outputs(names, got):
    """{name: value, name_lens_<level>: recursive sequence lengths} of fetched LoD tensors."""
    rec = {}
    for k, v in zip(names, got):
        rec[k] = np.array(v)
        for lv, lens in enumerate(v.recursive_sequence_lengths()):
            rec['%s_lens_%d' % (k, lv)] = np.array(lens, 'int64')
    return rec


def batch_of(ref, step, names):
    return {k: ref['%s_%d' % (k, step)] for k in names}


def replay(fluid, gen, ref, names, parallel):
    """Trains gen.build's program with `fluid` from the recorded parameters on the
    recorded batches, checking the loss, the fetched gradients and the trained
    parameters against the record."""
    main, startup, loss = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        start(fluid, gen, ref, scope, exe, startup)
        for step in range(gen.STEPS):
            res = exe.run(main, feed=gen.feed_of(fluid, batch_of(ref, step, names)),
                          fetch_list=[loss] + list(gen.FETCH))
            np.testing.assert_allclose(np.asarray(res[0]), ref['loss_%d' % step], rtol=1e-5,
                                       err_msg='step %d' % step)
            for name, v in zip(gen.FETCH, res[1:]):
                np.testing.assert_allclose(np.asarray(v), ref['%s_%d' % (name, step)],
                                           rtol=1e-4, atol=1e-6,
                                           err_msg='%s, step %d' % (name, step))
        for k in gen.PARAMS:
            np.testing.assert_allclose(np.array(scope.find_var(k).get_tensor()),
                                       ref['final_' + k], rtol=1e-5, atol=1e-6, err_msg=k)
    return main


def seed_parameters(fluid, program, scope, seed, scale):
    """Sets every parameter of `program` in `scope` to seeded normal values times
    `scale`, drawn in name order, so that both frameworks start alike: {name: value}."""
    rng = np.random.RandomState(seed)
    out = {}
    for p in sorted(program.global_block().all_parameters(), key=lambda p: p.name):
        v = (rng.randn(*p.shape) * scale).astype('float32')
        scope.find_var(p.name).get_tensor().set(v, fluid.CPUPlace())
        out[p.name] = v
    return out


def train_record(fluid, main, startup, fetch, feeds, seed, scale, check=None, exe=None,
                 finish=None):
    """Runs `startup`, seeds the parameters (seed_parameters), then trains `main` on the
    feed dicts `feeds` with `exe` (a default Executor if None), fetching `fetch` ({name:
    variable}) at every step. Returns the record: `param_<p>`, `<name>_<step>` (with
    `<name>_lod_<step>`, the offsets, where the value has a LoD) and `final_<p>`.
    `check(step, values)` is called after each step with that step's part of the record;
    `finish(exe)` runs in the training scope after the last step."""
    exe = exe or fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    names = list(fetch)
    rec = {}
    with fluid.scope_guard(scope):
        exe.run(startup)
        params = seed_parameters(fluid, main, scope, seed, scale)
        rec.update(('param_' + k, v) for k, v in params.items())
        for step, feed in enumerate(feeds):
            got = exe.run(main, feed=feed, fetch_list=[fetch[k] for k in names],
                          return_numpy=False)
            now = {}
            for k, v in zip(names, got):
                now['%s_%d' % (k, step)] = np.array(v)
                if v.lod():
                    now['%s_lod_%d' % (k, step)] = np.array(v.lod()[-1], 'int64')
            if check:
                check(step, now)
            rec.update(now)
        for k in params:
            rec['final_' + k] = np.array(scope.find_var(k).get_tensor())
        if finish:
            finish(exe)
    return rec


def write_records(gen, names, run=None):
    """Run under PaddlePaddle 1.8.5: for each name, the record `run(fluid, name)` returns
    (gen.run by default) goes to gen.OUT/<name>.npz, and its losses are printed."""
    import paddle.fluid as fluid
    os.makedirs(gen.OUT, exist_ok=True)
    for name in names:
        rec = (run or gen.run)(fluid, name)
        np.savez(os.path.join(gen.OUT, name + '.npz'), **rec)
        steps = sorted(int(k[len('loss_'):]) for k in rec if k.startswith('loss_'))
        print(name, [float(rec['loss_%d' % s].reshape(-1)[0]) for s in steps])
