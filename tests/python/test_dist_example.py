"""examples/dist_train/train.py: the local run trains; the same run through the launcher
(2 pservers x 2 trainers, each trainer feeding half of every batch, sync mode) reaches
the local accuracy, saves a model that scores it, and every process exits 0. Each run is
a subprocess under a timeout."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

import rill
import rill.distributed as dist
from conftest import ROOT

SCRIPT = os.path.join(ROOT, 'examples', 'dist_train', 'train.py')
STEPS = 60
TIMEOUT = 180


def run(args, timeout=TIMEOUT):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.path.join(ROOT, 'python') + os.pathsep + env.get('PYTHONPATH', '')
    return subprocess.run([sys.executable] + list(args), env=env, cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def accuracy(out, tag):
    found = re.findall(r'%s: test accuracy ([0-9.]+)' % tag, out.decode())
    assert len(found) == 1, out.decode()
    return float(found[0])


def saved_accuracy(model_dir):
    """Test accuracy of the inference model in model_dir, loaded in a fresh scope."""
    spec = importlib.util.spec_from_file_location('dist_train_example', SCRIPT)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    _, (xte, yte) = example.load_digits()
    exe = rill.Executor(rill.CPUPlace())
    with rill.scope_guard(rill.Scope()):
        program, feeds, fetches = rill.io.load_inference_model(str(model_dir), exe)
        probs, = exe.run(program, feed={feeds[0]: xte}, fetch_list=fetches)
    return float((probs.argmax(1) == yte[:, 0]).mean())


@pytest.fixture(scope='module')
def local_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp('local') / 'model'
    r = run([SCRIPT, '--local', '--steps', str(STEPS), '--save-dir', str(out_dir)])
    assert r.returncode == 0, r.stderr.decode()
    return accuracy(r.stdout, 'local'), out_dir, r


def test_local_run_trains_and_saves(local_run):
    acc, out_dir, r = local_run
    assert acc > 0.9
    assert abs(saved_accuracy(out_dir) - acc) < 1e-4  # printed to 4 places
    assert b'local [' in r.stderr and b'%d/%d' % (STEPS, STEPS) in r.stderr


def test_without_a_role_the_example_says_how_to_run_it():
    env_free = {k: v for k, v in os.environ.items()
                if k not in ('PADDLE_TRAINING_ROLE', 'TRAINING_ROLE')}
    env_free['PYTHONPATH'] = os.path.join(ROOT, 'python')
    r = subprocess.run([sys.executable, SCRIPT, '--steps', '1'], env=env_free, cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 2
    assert b'rill.distributed.launch' in r.stderr and b'--local' in r.stderr


def test_distributed_run_matches_local(local_run, tmp_path):
    missing = dist.missing_kernels()
    if missing:
        pytest.skip('the parameter-server runtime is not in this build: no CPU kernel '
                    'for %s' % ', '.join(missing))
    local_acc = local_run[0]
    out_dir = tmp_path / 'model'
    r = run(['-m', 'rill.distributed.launch', '--servers', '2', '--workers', '2',
             '--server_grace', '30', SCRIPT, '--steps', str(STEPS),
             '--save-dir', str(out_dir)])
    log = r.stdout.decode() + r.stderr.decode()
    assert r.returncode == 0, log
    acc = accuracy(r.stdout, r'\[trainer\.0\] distributed')
    # Sync mode: each step is the local step on the whole batch, up to the order of
    # float additions; one test image of 360 is 0.0028.
    assert abs(acc - local_acc) <= 0.006, (acc, local_acc)
    assert abs(saved_accuracy(out_dir) - acc) < 1e-4  # printed to 4 places
    for i in range(2):
        assert '[pserver.%d] pserver' % i in log and 'every trainer has finished' in log
    # The progress bar is trainer 0's only.
    assert '[trainer.0] trainer 0 [' in log and '[trainer.1] trainer 0 [' not in log
