"""Checkpoints from Python: CheckpointConfig in minimize, load_checkpoint, exact resume
in-process and across SIGKILLs of the recognize_digits example, and the errors a user or
a damaged directory can cause."""
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import rill
from conftest import ROOT

EXAMPLE = os.path.join(ROOT, 'examples', 'recognize_digits', 'train.py')


def build(ckpt_dir, every=2, keep=0, vars=None, hidden=16, optimizer=None):
    """MLP with dropout (so the generator state matters) and Adam (optimizer state)."""
    main, startup = rill.Program(), rill.Program()
    main.random_seed = startup.random_seed = 11
    with rill.program_guard(main, startup), rill.unique_name.guard():
        x = rill.layers.data('x', [6])
        y = rill.layers.data('y', [1])
        h = rill.layers.dropout(rill.layers.fc(x, hidden, act='relu'), 0.4)
        loss = rill.layers.mean(rill.layers.square_error_cost(rill.layers.fc(h, 1), y))
        config = None
        if ckpt_dir is not None:
            config = rill.io.CheckpointConfig(ckpt_dir, every_n_steps=every, max_to_keep=keep,
                                              vars=vars)
        (optimizer or rill.optimizer.Adam(0.01)).minimize(loss, checkpoint_config=config)
    return main, startup, loss


def batches(n):
    rs = np.random.RandomState(3)
    return rs.rand(n, 8, 6).astype('float32'), rs.rand(n, 8, 1).astype('float32')


def params(main, scope):
    return {p.name: np.array(scope.find_var(p.name).get_tensor())
            for p in main.global_block().all_parameters()}


def train(main, startup, loss, steps, scope, resume_dir=None):
    """Runs `steps` steps (from the checkpoint when resume_dir is given); returns the
    losses of the steps this call ran, the parameters and the step it started at."""
    xs, ys = batches(steps)
    exe = rill.Executor()
    with rill.scope_guard(scope):
        exe.run(startup)
        start = 0
        if resume_dir is not None:
            start = rill.io.load_checkpoint(exe, resume_dir, main).step
        losses = [exe.run(main, feed={'x': xs[s], 'y': ys[s]}, fetch_list=[loss])[0][0]
                  for s in range(start, steps)]
        exe.close()
        return losses, params(main, scope), start


# ------------------------------------------------------------------ resume ----

def test_resume_from_every_checkpoint_is_bitwise_exact(tmp_path):
    d = str(tmp_path / 'ck')
    main, startup, loss = build(d, every=3)
    losses, final, _ = train(main, startup, loss, 12, rill.Scope())
    steps = sorted(c.step for c in rill.io.list_checkpoints(d))
    assert steps == [3, 6, 9, 12]
    for keep in (9, 6, 3):
        # Only checkpoints up to `keep` left: a fresh process would resume there.
        for c in rill.io.list_checkpoints(d):
            if c.step > keep:
                shutil.rmtree(c.path)
        m2, s2, l2 = build(d, every=3)
        resumed, final2, start = train(m2, s2, l2, 12, rill.Scope(), resume_dir=d)
        assert start == keep
        assert [float(v) for v in resumed] == [float(v) for v in losses[keep:]]
        for name in final:
            assert final2[name].tobytes() == final[name].tobytes(), name


def test_checkpoint_ops_stay_out_of_test_clones_and_inference_models(tmp_path):
    main, startup, loss = build(str(tmp_path / 'ck'))
    ops = [op.type for op in main.global_block().ops]
    assert ops[-2:] == ['increment', 'checkpoint']
    assert main.global_block().ops[-1].attr('op_role') == rill.framework.OpRole.Optimize
    assert rill.io.CHECKPOINT_STEP_VAR in startup.global_block().vars
    test = main.clone(for_test=True)
    assert 'checkpoint' not in [op.type for op in test.global_block().ops]
    exe = rill.Executor()
    exe.run(startup)
    pred = main.global_block().ops[0].output('Out')[0]
    rill.io.save_inference_model(str(tmp_path / 'm'), ['x'], [main.global_block().var(pred)],
                                 exe, main_program=main)
    program, _, _ = rill.io.load_inference_model(str(tmp_path / 'm'), exe)
    types = [op.type for op in program.global_block().ops]
    assert 'checkpoint' not in types and 'increment' not in types
    assert rill.io.CHECKPOINT_STEP_VAR not in os.listdir(str(tmp_path / 'm'))


def test_config_vars_selects_what_is_saved(tmp_path):
    d = str(tmp_path / 'ck')
    main, startup, loss = build(d, every=1, vars=['fc_0.w_0'])
    train(main, startup, loss, 1, rill.Scope())
    ck, = rill.io.list_checkpoints(d)
    assert ck.step == 1 and ck.verified
    assert sorted(os.listdir(ck.path)) == ['@CHECKPOINT_STEP@', 'MANIFEST', 'fc_0.w_0']


def test_stats_and_flush(tmp_path):
    d = str(tmp_path / 'ck')
    main, startup, loss = build(d, every=2)
    xs, ys = batches(5)
    exe = rill.Executor()
    exe.run(startup)
    with pytest.raises(rill.NotFoundError):
        exe.checkpoint_stats(d)  # no checkpoint op has run yet
    for s in range(5):
        exe.run(main, feed={'x': xs[s], 'y': ys[s]}, fetch_list=[loss])
    exe.flush()
    st = exe.checkpoint_stats(d)
    assert st['saved'] == 2 and st['last_step'] == 4 and st['failed'] == 0
    assert not st['in_flight'] and st['last_bytes'] > 0
    exe.close()
    exe.close()  # twice is fine
    with pytest.raises(rill.FailedPreconditionError, match='closed'):
        exe.flush()


def test_failed_background_write_is_raised_by_flush(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('not a directory')
    d = str(blocker / 'ck')  # mkdir below a regular file fails
    main, startup, loss = build(d, every=1)
    xs, ys = batches(1)
    exe = rill.Executor()
    exe.run(startup)
    exe.run(main, feed={'x': xs[0], 'y': ys[0]}, fetch_list=[loss])  # the write fails later
    with pytest.raises(rill.Error) as e:
        exe.close()
    assert d in str(e.value) or str(blocker) in str(e.value)
    assert exe._closed


# -------------------------------------------------------------- bad input ----

@pytest.mark.parametrize('kwargs, match', [
    (dict(every_n_steps=-1), 'every_n_steps'),
    (dict(every_n_seconds=-0.5), 'every_n_seconds'),
    (dict(max_to_keep=-2), 'max_to_keep'),
    (dict(every_n_steps=2.5), 'every_n_steps'),
    (dict(every_n_seconds='often'), 'every_n_seconds'),
])
def test_config_rejects_bad_settings(tmp_path, kwargs, match):
    with pytest.raises(rill.InvalidArgumentError, match=match):
        rill.io.CheckpointConfig(str(tmp_path), **kwargs)


@pytest.mark.parametrize('d', ['', None, 3])
def test_config_needs_a_directory(d):
    with pytest.raises(rill.InvalidArgumentError, match='checkpoint_dir'):
        rill.io.CheckpointConfig(d)


def test_config_unknown_variable_leaves_the_program_unchanged(tmp_path):
    main, startup, loss = build(None)
    before = main.serialize_to_string(), startup.serialize_to_string()
    cfg = rill.io.CheckpointConfig(str(tmp_path), vars=['no_such_var'])
    with pytest.raises(rill.NotFoundError, match='no_such_var'):
        cfg._append(main, startup)
    assert (main.serialize_to_string(), startup.serialize_to_string()) == before
    with pytest.raises(TypeError, match='CheckpointConfig'):
        rill.optimizer.SGD(0.1).minimize(loss, checkpoint_config=str(tmp_path))


def test_load_missing_or_empty_directory(tmp_path):
    main, startup, _ = build(str(tmp_path / 'ck'))
    exe = rill.Executor()
    exe.run(startup)
    with pytest.raises(rill.NotFoundError, match='no checkpoint directory'):
        rill.io.load_checkpoint(exe, str(tmp_path / 'absent'), main)
    with pytest.raises(rill.NotFoundError, match='no checkpoint directory'):
        rill.io.list_checkpoints(str(tmp_path / 'absent'))
    (tmp_path / 'empty').mkdir()
    with pytest.raises(rill.NotFoundError):
        rill.io.load_checkpoint(exe, str(tmp_path / 'empty'), main)
    assert rill.io.list_checkpoints(str(tmp_path / 'empty')) == []
    with pytest.raises(rill.InvalidArgumentError):
        rill.io.load_checkpoint(exe, '', main)
    with pytest.raises(TypeError, match='Executor'):
        rill.io.load_checkpoint(None, str(tmp_path / 'empty'), main)
    exe.close()
    with pytest.raises(rill.FailedPreconditionError, match='closed'):
        rill.io.load_checkpoint(exe, str(tmp_path / 'empty'), main)


def flip_byte(path, offset=-3):
    with open(path, 'r+b') as f:
        f.seek(offset, os.SEEK_END)
        b = f.read(1)
        f.seek(offset, os.SEEK_END)
        f.write(bytes([b[0] ^ 0x10]))


def test_damaged_checkpoints_are_skipped_and_reported(tmp_path):
    d = str(tmp_path / 'ck')
    main, startup, loss = build(d, every=2)
    losses, _, _ = train(main, startup, loss, 6, rill.Scope())
    flip_byte(os.path.join(d, 'checkpoint_6', 'fc_0.w_0'))
    os.truncate(os.path.join(d, 'checkpoint_4', 'MANIFEST'), 10)
    listed = {c.step: c for c in rill.io.list_checkpoints(d)}
    assert not listed[6].verified and 'fc_0.w_0' in listed[6].problem
    assert not listed[4].verified and 'MANIFEST' in listed[4].problem
    assert listed[2].verified and listed[2].problem is None

    m2, s2, l2 = build(d, every=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        resumed, _, start = train(m2, s2, l2, 6, rill.Scope(), resume_dir=d)
    assert start == 2
    assert [float(v) for v in resumed] == [float(v) for v in losses[2:]]
    reported = [str(w.message) for w in caught if w.category is rill.io.CheckpointWarning]
    assert len(reported) == 2
    assert 'checkpoint_6' in reported[0] and 'fc_0.w_0' in reported[0]
    assert 'checkpoint_4' in reported[1]


def test_only_damaged_checkpoints_is_not_found_and_changes_nothing(tmp_path):
    d = str(tmp_path / 'ck')
    main, startup, loss = build(d, every=1, keep=1)
    train(main, startup, loss, 1, rill.Scope())
    flip_byte(os.path.join(d, 'checkpoint_1', 'fc_1.b_0'))
    exe = rill.Executor()
    scope = rill.Scope()
    with rill.scope_guard(scope):
        exe.run(startup)
        before = params(main, scope)
        with pytest.raises(rill.NotFoundError, match='checkpoint_1.*fc_1.b_0'):
            rill.io.load_checkpoint(exe, d, main)
        after = params(main, scope)
    assert all(before[k].tobytes() == after[k].tobytes() for k in before)


def test_another_program_is_refused(tmp_path):
    d = str(tmp_path / 'ck')
    main, startup, loss = build(d, every=1)
    train(main, startup, loss, 1, rill.Scope())
    for other, ostartup, _ in (build(d, every=1, hidden=24),
                               build(d, every=1, optimizer=rill.optimizer.SGD(0.01))):
        exe = rill.Executor()
        scope = rill.Scope()
        with rill.scope_guard(scope):
            exe.run(ostartup)
            before = params(other, scope)
            with pytest.raises(rill.FailedPreconditionError, match='another program'):
                rill.io.load_checkpoint(exe, d, other)
            assert all(v.tobytes() == params(other, scope)[k].tobytes() for k, v in before.items())


def test_resume_ignores_the_directory_path_and_the_checkpoint_settings(tmp_path, monkeypatch):
    """The same program with its checkpoints named by another path (absolute instead of
    relative, the directory moved) or taken on another schedule resumes, bitwise."""
    monkeypatch.chdir(tmp_path)
    main, startup, loss = build('ck', every=2, keep=0)  # relative
    ref, ref_params, _ = train(main, startup, loss, 12, rill.Scope())

    def keep_up_to(d, step):
        for c in rill.io.list_checkpoints(d):
            if c.step > step:
                shutil.rmtree(c.path)

    keep_up_to('ck', 4)
    ck = str(tmp_path / 'ck')
    main, startup, loss = build(ck, every=3, keep=2)  # absolute, another schedule
    got, _, start = train(main, startup, loss, 12, rill.Scope(), resume_dir=ck)
    assert start == 4 and got == ref[4:]
    assert [c.step for c in rill.io.list_checkpoints(ck)] == [12, 9]
    keep_up_to(ck, 9)
    os.rename(ck, str(tmp_path / 'moved'))
    main, startup, loss = build('moved', every=5, keep=0)
    got, final, start = train(main, startup, loss, 12, rill.Scope(), resume_dir='moved')
    assert start == 9 and got == ref[9:]
    assert all(final[k].tobytes() == v.tobytes() for k, v in ref_params.items())


# ------------------------------------------- killed and resumed, by process ----

def run_example(args, env, **kw):
    return subprocess.Popen([sys.executable, EXAMPLE, '--model', 'mlp'] + args, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def tree(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, 'rb') as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def newest_step(d):
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return -1
    return max([int(n.split('_')[1]) for n in names if n.startswith('checkpoint_')] or [-1])


def resumed_steps(out):
    return [int(l.split('step ')[1].split()[0]) for l in out.splitlines()
            if 'resumed from the checkpoint of step' in l]


def test_example_killed_at_random_moments_saves_the_same_model(tmp_path):
    """recognize_digits --steps 400 --checkpoint-dir: SIGKILLed once while starting up,
    once each after random checkpoints (fixed seed) and once while saving, rerun until
    it finishes: each rerun resumes from the newest checkpoint, and the inference model
    it saves equals, file by file and byte by byte, the one of an uninterrupted run
    without checkpoints."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([os.path.join(ROOT, 'python')] +
                                        [p for p in [env.get('PYTHONPATH')] if p])
    steps = ['--steps', '400']
    ref = run_example(steps + ['--save-dir', str(tmp_path / 'ref')], env)
    out, _ = ref.communicate(timeout=120)
    assert ref.returncode == 0, out

    ck = str(tmp_path / 'ck')
    args = steps + ['--save-dir', str(tmp_path / 'out'), '--checkpoint-dir', ck,
                    '--checkpoint-every', '5']
    rnd = random.Random(20261124)
    # Kill moments: one while the process starts, then after the checkpoint of a random
    # step is on disk plus a random delay (the kill lands in a step, a snapshot or a
    # background write), at steps far enough from the end that the run is still going.
    # A last one after the final checkpoint, while the model is evaluated and saved
    # (that process may also finish first).
    targets = [None] + sorted(rnd.sample(range(10, 300, 5), 4))
    kills = 0
    mlp_ck = os.path.join(ck, 'mlp')
    for target in targets + [400]:
        start = newest_step(mlp_ck)
        p = run_example(args, env)
        if target is None:
            time.sleep(rnd.uniform(0.05, 0.4))
        else:
            # Until this process has written a checkpoint of its own at or past target.
            while p.poll() is None and newest_step(mlp_ck) < max(target, start + 1):
                time.sleep(0.002)
            time.sleep(rnd.uniform(0.0, 0.03 if target < 400 else 0.15))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        out, _ = p.communicate(timeout=120)
        if target is not None and target < 400:
            assert p.returncode == -signal.SIGKILL, out
            if start >= 0:  # it resumed from the newest checkpoint there was
                assert resumed_steps(out) == [start], out
        if os.path.isdir(mlp_ck):
            for c in rill.io.list_checkpoints(mlp_ck):
                assert c.verified, c.problem  # a kill leaves only whole checkpoints
    start = newest_step(mlp_ck)
    last = run_example(args, env)
    out, _ = last.communicate(timeout=120)
    assert last.returncode == 0, out
    assert start >= targets[-1] and resumed_steps(out) == [start], out
    assert kills >= len(targets)

    want, got = tree(str(tmp_path / 'ref')), tree(str(tmp_path / 'out'))
    assert sorted(got) == sorted(want)
    assert os.path.join('mlp', '__model__') in want and len(want) == 7
    for name in want:
        assert got[name] == want[name], name


def test_example_resumes_with_another_path_and_interval(tmp_path):
    """recognize_digits resumed with its checkpoint directory given by an absolute path
    instead of a relative one, then moved, each time with another --checkpoint-every:
    it resumes every time and saves the model an uninterrupted run saves."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([os.path.join(ROOT, 'python')] +
                                        [p for p in [env.get('PYTHONPATH')] if p])
    ref = run_example(['--steps', '90', '--save-dir', str(tmp_path / 'ref')], env)
    out, _ = ref.communicate(timeout=120)
    assert ref.returncode == 0, out
    runs = [(30, 'ck', 5, None), (60, str(tmp_path / 'ck'), 7, 30), (90, 'moved', 4, 56)]
    for steps, ck, every, resumed in runs:
        if ck == 'moved':
            os.rename(str(tmp_path / 'ck'), str(tmp_path / 'moved'))
        p = run_example(['--steps', str(steps), '--save-dir', 'out', '--checkpoint-dir', ck,
                         '--checkpoint-every', str(every)], env, cwd=str(tmp_path))
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out
        assert resumed_steps(out) == ([resumed] if resumed else []), out
    want, got = tree(str(tmp_path / 'ref')), tree(str(tmp_path / 'out'))
    assert sorted(got) == sorted(want) and want
    for name in want:
        assert got[name] == want[name], name


def test_config_takes_numpy_integers(tmp_path):
    cfg = rill.io.CheckpointConfig(str(tmp_path), every_n_steps=np.int64(4),
                                   max_to_keep=np.int32(1))
    assert cfg.every_n_steps == 4 and cfg.max_to_keep == 1
    assert 'every_n_steps=4' in repr(cfg)


TRAIN_SCRIPT = """
import sys
import numpy as np
import rill
x = rill.layers.data('x', [256])
loss = rill.layers.mean(rill.layers.fc(rill.layers.fc(x, 512), 1))
rill.optimizer.Adam(0.01).minimize(loss, checkpoint_config=rill.io.CheckpointConfig(sys.argv[1]))
exe = rill.Executor()
exe.run(rill.default_startup_program())
for s in range(int(sys.argv[2])):
    exe.run(feed={'x': np.ones((4, 256), 'float32')}, fetch_list=[loss])
"""


def run_script(tmp_path, d, steps):
    script = tmp_path / 'train.py'
    script.write_text(TRAIN_SCRIPT)
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([os.path.join(ROOT, 'python')] +
                                        [p for p in [env.get('PYTHONPATH')] if p])
    return subprocess.run([sys.executable, str(script), d, str(steps)], env=env, timeout=120,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_script_that_never_closes_its_executor_writes_its_last_checkpoint(tmp_path):
    d = str(tmp_path / 'ck')
    r = run_script(tmp_path, d, 3)
    assert r.returncode == 0, r.stderr
    newest = rill.io.list_checkpoints(d)[0]
    assert newest.step == 3 and newest.verified


def test_a_write_failing_after_the_last_run_is_reported_at_exit(tmp_path):
    (tmp_path / 'file').write_text('not a directory')
    d = str(tmp_path / 'file' / 'ck')
    r = run_script(tmp_path, d, 1)  # one run: its write fails after it returned
    assert 'rill: closing an executor at exit' in r.stderr and d in r.stderr, r.stderr
