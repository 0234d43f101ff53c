"""Writes static_rnn_lm/: a PTB-style word language model trained in Paddle 1.8.5. Ids
[B, T, 1] go through an embedding, are transposed to time-major and run through a
layers.StaticRNN of LAYERS stacked LSTM cells. In the `fc` variant each cell is made of
concat, matmul, elementwise_add, split, sigmoid, tanh and elementwise_mul over named
weights, its states booted from slices of the fed init_hidden / init_cell; in the
`lstm_unit` variant each cell is layers.lstm_unit and the states boot from constants;
the `unrolled` variant runs the fc cells by a Python loop over the steps (split over
time) and stacks the outputs and the last states with layers.stack. The outputs project onto the vocabulary; softmax_with_cross_entropy against the next
ids, averaged over the batch and summed over time, is the loss, trained by SGD with
global-norm clipping. The last hidden states (concat of the rnn's extra outputs, or a
stack) are fetched too. Parameters get seeded values in name order; for each variant of VARIANTS
the file holds the batches, Paddle's loss and last hidden state at every step and the
trained parameters. `build(fluid, variant)` is shared with
tests/python/test_book_paddle18.py, which trains the same program with rill. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os
import sys

import numpy as np

import _steps

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'static_rnn_lm')
VOCAB, HIDDEN, LAYERS, B, T = 30, 8, 2, 3, 5
STEPS = 4
VARIANTS = ('fc', 'lstm_unit', 'unrolled')
RESULTS = ('loss', 'last_hidden')


def cell_params(fluid, layer):
    L = fluid.layers
    return (L.create_parameter([2 * HIDDEN, 4 * HIDDEN], 'float32', name='w_%d' % layer),
            L.create_parameter([4 * HIDDEN], 'float32', name='b_%d' % layer, is_bias=True))


def fc_cell(fluid, x, h, c, params):
    L = fluid.layers
    w, b = params
    gates = L.elementwise_add(L.matmul(L.concat([x, h], 1), w), b)
    i, j, f, o = L.split(gates, num_or_sections=4, dim=-1)
    c_new = L.elementwise_add(L.elementwise_mul(c, L.sigmoid(f)),
                              L.elementwise_mul(L.sigmoid(i), L.tanh(j)))
    h_new = L.elementwise_mul(L.tanh(c_new), L.sigmoid(o))
    return h_new, c_new


def unit_cell(fluid, x, h, c, layer):
    return fluid.layers.lstm_unit(x, h, c, forget_bias=0.5,
                                  param_attr=fluid.ParamAttr(name='uw_%d' % layer),
                                  bias_attr=fluid.ParamAttr(name='ub_%d' % layer))


def build(fluid, variant):
    """Returns (main, startup, {result name: variable}); names are numbered from 0
    in every build, so the parameters are named alike in every run."""
    main, startup = fluid.Program(), fluid.Program()
    L = fluid.layers
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name='x', shape=[T, 1], dtype='int64')
        y = L.data(name='y', shape=[T, 1], dtype='int64')
        init_hidden = L.data(name='init_hidden', shape=[LAYERS, -1, HIDDEN],
                             dtype='float32', append_batch_size=False)
        init_cell = L.data(name='init_cell', shape=[LAYERS, -1, HIDDEN], dtype='float32',
                           append_batch_size=False)
        emb = L.embedding(input=x, size=[VOCAB, HIDDEN], dtype='float32',
                          param_attr=fluid.ParamAttr(name='embedding_para'))
        emb = L.reshape(emb, shape=[-1, T, HIDDEN])
        time_major = L.transpose(emb, perm=[1, 0, 2])
        boot = [[L.reshape(L.slice(v, axes=[0], starts=[k], ends=[k + 1]), shape=[-1, HIDDEN])
                 for v in (init_hidden, init_cell)] for k in range(LAYERS)]
        if variant == 'unrolled':
            out, last_hidden = unrolled(fluid, emb, boot)
        else:
            out, last_hidden = static_rnn(fluid, variant, time_major, boot)
        softmax_w = L.create_parameter([HIDDEN, VOCAB], 'float32', name='softmax_weight')
        softmax_b = L.create_parameter([VOCAB], 'float32', name='softmax_bias', is_bias=True)
        logits = L.elementwise_add(L.matmul(L.reshape(out, shape=[-1, HIDDEN]), softmax_w),
                                   softmax_b)
        cost = L.softmax_with_cross_entropy(logits=logits, label=L.reshape(y, shape=[-1, 1]))
        cost = L.reshape(cost, shape=[-1, T])
        loss = L.reduce_sum(L.reduce_mean(cost, dim=[0]))
        fluid.optimizer.SGD(learning_rate=0.5,
                            grad_clip=fluid.clip.GradientClipByGlobalNorm(clip_norm=1.0)
                            ).minimize(loss)
    return main, startup, {'loss': loss, 'last_hidden': last_hidden}


def static_rnn(fluid, variant, time_major, boot):
    """The cells in a StaticRNN over time-major input: (outputs [B, T, HIDDEN], last
    hidden states [LAYERS, B, HIDDEN])."""
    L = fluid.layers
    rnn = L.StaticRNN()
    with rnn.step():
        inp = xt = rnn.step_input(time_major)
        hs, cs = [], []
        for k in range(LAYERS):
            if variant == 'fc':
                h_prev, c_prev = rnn.memory(init=boot[k][0]), rnn.memory(init=boot[k][1])
                h, c = fc_cell(fluid, inp, h_prev, c_prev, cell_params(fluid, k))
            else:
                h_prev = rnn.memory(shape=[-1, HIDDEN], batch_ref=xt, init_value=0.1)
                c_prev = rnn.memory(shape=[-1, HIDDEN], batch_ref=xt, init_value=-0.2)
                h, c = unit_cell(fluid, inp, h_prev, c_prev, k)
            rnn.update_memory(h_prev, h)
            rnn.update_memory(c_prev, c)
            hs.append(h)
            cs.append(c)
            inp = h
        rnn.step_output(inp)
        for h in hs:
            rnn.step_output(h)
    outs = rnn()
    out = L.transpose(outs[0], perm=[1, 0, 2])
    last_hidden = L.concat([L.slice(o, axes=[0], starts=[T - 1], ends=[T])
                            for o in outs[1:]], 0)
    return out, last_hidden


def unrolled(fluid, emb, boot):
    """The fc cells run over the T steps by a Python loop (split over time), their outputs
    stacked to [B, T, HIDDEN] and the last hidden states to [LAYERS, B, HIDDEN]."""
    L = fluid.layers
    hs = [b[0] for b in boot]
    cs = [b[1] for b in boot]
    params = [cell_params(fluid, k) for k in range(LAYERS)]
    outs = []
    for xt in L.split(emb, num_or_sections=T, dim=1):
        inp = L.reshape(xt, shape=[-1, HIDDEN])
        for k in range(LAYERS):
            hs[k], cs[k] = fc_cell(fluid, inp, hs[k], cs[k], params[k])
            inp = hs[k]
        outs.append(inp)
    return L.stack(outs, axis=1), L.stack(hs, axis=0)


def batches(seed=11):
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(STEPS):
        ids = rng.randint(0, VOCAB, (B, T + 1, 1)).astype('int64')
        out.append({'x': ids[:, :-1], 'y': ids[:, 1:],
                    'init_hidden': (rng.randn(LAYERS, B, HIDDEN) * 0.3).astype('float32'),
                    'init_cell': (rng.randn(LAYERS, B, HIDDEN) * 0.3).astype('float32')})
    return out


def run(fluid, variant, check=None, exe=None):
    """Trains build(fluid, variant) on batches() from seeded parameters
    (_steps.train_record, whose record it returns)."""
    main, startup, results = build(fluid, variant)
    return _steps.train_record(fluid, main, startup, results, batches(), seed=4, scale=0.3,
                               check=check, exe=exe)


def main():
    _steps.write_records(sys.modules[__name__], VARIANTS)


if __name__ == '__main__':
    main()
