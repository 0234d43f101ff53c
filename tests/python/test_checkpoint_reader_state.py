"""A data reader's own state saved with the checkpoint (CheckpointConfig reader_state /
restore_reader): a reader that shuffles with its own generator is resumed where it was,
so a run resumed from a checkpoint draws the same batches and logs the same losses, bit
for bit, as an uninterrupted one."""
import pickle

import numpy as np
import pytest

import rill as fluid


class ShufflingReader(object):
    """Batches drawn from its own generator: the next batch is not a function of the
    step, only of the generator's state."""

    def __init__(self):
        self.rng = np.random.RandomState(3)
        self.drawn = 0

    def next(self):
        self.drawn += 1
        return self.rng.normal(size=(8, 4)).astype('float32')

    def state(self):
        return pickle.dumps((self.rng.get_state(), self.drawn))

    def restore(self, data):
        st, drawn = pickle.loads(data)
        self.rng.set_state(st)
        self.drawn = drawn


def _build(ckdir, reader, with_state=True):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data('x', [4])
        y = fluid.layers.fc(x, 3)
        loss = fluid.layers.mean(fluid.layers.square(y))
        kw = dict(reader_state=reader.state, restore_reader=reader.restore) if with_state else {}
        config = fluid.io.CheckpointConfig(ckdir, every_n_steps=1, max_to_keep=2, **kw)
        fluid.optimizer.SGD(0.1).minimize(loss, checkpoint_config=config)
    return main, startup, loss, config


def _train(ckdir, steps, resume, with_state=True):
    reader = ShufflingReader()
    main, startup, loss, config = _build(ckdir, reader, with_state)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    out = []
    with fluid.scope_guard(scope):
        exe.run(startup)
        start = fluid.io.load_checkpoint(exe, config, main).step if resume else 0
        assert reader.drawn == start or not with_state
        for _ in range(start, steps):
            lv, = exe.run(main, feed={'x': reader.next()}, fetch_list=[loss])
            out.append(float(lv.reshape(-1)[0]))
    exe.close()
    return out


def test_resumed_reader_draws_the_same_batches(tmp_path):
    whole = _train(str(tmp_path / 'a'), 10, False)
    first = _train(str(tmp_path / 'b'), 6, False)
    rest = _train(str(tmp_path / 'b'), 10, True)
    assert first + rest == whole


def test_without_the_reader_state_the_resumed_losses_differ(tmp_path):
    """The claim above is not vacuous: resuming the step alone restarts the reader."""
    whole = _train(str(tmp_path / 'a'), 10, False, with_state=False)
    _train(str(tmp_path / 'b'), 6, False, with_state=False)
    rest = _train(str(tmp_path / 'b'), 10, True, with_state=False)
    assert rest != whole[6:]


def test_reader_state_and_restore_go_together(tmp_path):
    with pytest.raises(fluid.InvalidArgumentError):
        fluid.io.CheckpointConfig(str(tmp_path), reader_state=lambda: b'')


def test_a_trainer_part_keeps_the_reader_state(tmp_path):
    """Transpiled for a parameter-server job, the trainer's checkpoint op saves the
    reader's state with its step counter (the parameters are the pservers')."""
    reader = ShufflingReader()
    main, startup, loss, config = _build(str(tmp_path), reader)
    t = fluid.DistributeTranspiler()
    t.transpile(1, program=main, pservers='127.0.0.1:6170,127.0.0.1:6171', trainers=2,
                startup_program=startup)
    tp = t.get_trainer_program()
    ck = [op for op in tp.global_block().ops if op.type == 'checkpoint']
    assert len(ck) == 1 and ck is not None
    xs = ck[0].input('X')
    assert '@CHECKPOINT_READER_STATE@' in xs, xs
    assert not any(p.name in xs for p in main.global_block().all_parameters()), xs
    assert ck[0].attr('cluster_trainer_id') == 1
    assert tp.global_block().ops[-1].type == 'checkpoint'
