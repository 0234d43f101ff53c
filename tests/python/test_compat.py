"""`python -m rill.compat SCRIPT`: Fluid 1.x scripts that import paddle run on rill
unchanged."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rill
import rill.compat

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FIT_A_LINE = '''
import sys
import numpy as np
import paddle
import paddle.fluid as fluid
from paddle.fluid import layers
import paddle.fluid.optimizer as optimizer
from paddle.fluid.executor import Executor

assert __name__ == '__main__'
steps = int(sys.argv[1])
x = fluid.data(name='x', shape=[None, 13], dtype='float32') if hasattr(fluid, 'data') \\
    else layers.data(name='x', shape=[13], dtype='float32')
y = layers.data(name='y', shape=[1], dtype='float32')
pred = layers.fc(input=x, size=1, act=None)
avg_cost = layers.mean(layers.square_error_cost(input=pred, label=y))
optimizer.SGD(learning_rate=0.05).minimize(avg_cost)
place = fluid.CPUPlace()
exe = Executor(place)
exe.run(fluid.default_startup_program())
feeder = fluid.DataFeeder(place=place, feed_list=[x, y])
train_reader = paddle.batch(
    paddle.reader.shuffle(paddle.dataset.uci_housing.train(), buf_size=500), batch_size=4)
losses = []
for step in range(steps):
    for data in train_reader():
        loss, = exe.run(fluid.default_main_program(), feed=feeder.feed(data),
                        fetch_list=[avg_cost])
        losses.append(float(np.array(loss).reshape(-1)[0]))
print('first %.6f last %.6f' % (losses[0], losses[-1]))
print('argv', sys.argv)
'''


def housing(home):
    rng = np.random.RandomState(3)
    feats = rng.rand(40, 13)
    price = feats @ np.linspace(1, 3, 13) + 5
    rows = np.concatenate([feats, price[:, None]], 1)
    d = home / '.cache' / 'paddle' / 'dataset' / 'uci_housing'
    d.mkdir(parents=True)
    (d / 'housing.data').write_text('\n'.join(' '.join('%.6f' % v for v in r) for r in rows))


def run_compat(tmp_path, script, *args):
    path = tmp_path / 'script.py'
    path.write_text(textwrap.dedent(script))
    env = dict(os.environ, HOME=str(tmp_path),
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, 'python'),
                                           os.environ.get('PYTHONPATH', '')]))
    env.pop('PADDLE_DATA_HOME', None)
    return subprocess.run([sys.executable, '-m', 'rill.compat', str(path)] + list(args),
                          cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=300)


def test_fit_a_line_script_trains_through_paddle_imports(tmp_path):
    housing(tmp_path)
    r = run_compat(tmp_path, FIT_A_LINE, '15', '--flag')
    assert r.returncode == 0, r.stderr
    lines = dict(l.split(' ', 1) for l in r.stdout.splitlines())
    first, last = [float(v) for v in lines['first'].split(' last ')]
    assert last < first / 4
    assert lines['argv'].endswith("'15', '--flag']")
    assert 'script.py' in lines['argv']


def test_script_errors_are_the_scripts(tmp_path):
    r = run_compat(tmp_path, 'import paddle.fluid.contrib\n')
    assert r.returncode != 0
    assert "No module named 'paddle.fluid.contrib'" in r.stderr
    assert 'fluid_api.md' in r.stderr
    r = run_compat(tmp_path, 'import paddle.dataset\npaddle.dataset.mnist.train()\n')
    assert r.returncode != 0 and 'DatasetFileMissing' in r.stderr
    assert 'train-images-idx3-ubyte.gz' in r.stderr


def test_missing_script_and_usage(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, 'python'))
    r = subprocess.run([sys.executable, '-m', 'rill.compat', str(tmp_path / 'nope.py')],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "cannot open script" in r.stderr
    r = subprocess.run([sys.executable, '-m', 'rill.compat'], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 2 and 'usage' in r.stderr


@pytest.fixture
def aliases():
    rill.compat.install()
    yield
    rill.compat.uninstall()


def test_aliases_are_the_rill_modules(aliases):
    import paddle
    import paddle.fluid as fluid
    import paddle.fluid.layers
    import paddle.batch
    from paddle.fluid import layers, io
    from paddle.dataset import uci_housing
    import paddle.reader
    assert fluid is rill and layers is rill.layers and io is rill.io
    assert paddle.fluid.layers is rill.layers
    assert uci_housing is rill.dataset.uci_housing
    assert paddle.reader is rill.compat.reader
    assert callable(paddle.batch) and paddle.batch is rill.compat.reader.batch
    assert rill.__name__ == 'rill' and rill.layers.__name__ == 'rill.layers'


def test_reader_decorators():
    from rill.compat import reader as R

    def numbers():
        return iter(range(7))
    assert list(R.batch(numbers, 3)()) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(R.batch(numbers, 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5]]
    assert sorted(R.shuffle(numbers, 3)()) == list(range(7))
    assert list(R.firstn(numbers, 2)()) == [0, 1]
    assert list(R.chain(numbers, numbers)()) == list(range(7)) * 2
    assert list(R.map_readers(lambda a, b: a * b, numbers, numbers)()) == [i * i for i in range(7)]
    assert list(R.compose(numbers, lambda: iter([(1, 2)] * 7))())[3] == (3, 1, 2)
    with pytest.raises(R.ComposeNotAligned):
        list(R.compose(numbers, R.firstn(numbers, 3))())
    assert list(R.compose(numbers, R.firstn(numbers, 3), check_alignment=False)()) == \
        [(0, 0), (1, 1), (2, 2)]
    assert list(R.buffered(numbers, 2)()) == list(range(7))
    assert list(R.cache(numbers)()) == list(range(7))
    assert list(R.xmap_readers(lambda v: v * 10, numbers, 3, 4, order=True)()) == \
        [i * 10 for i in range(7)]
    assert sorted(R.xmap_readers(lambda v: v + 1, numbers, 2, 2)()) == list(range(1, 8))
    with pytest.raises(ValueError):
        R.batch(numbers, 0)
