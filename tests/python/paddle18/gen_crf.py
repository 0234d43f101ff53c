"""Writes crf/: Paddle 1.8.5's numbers for linear_chain_crf and crf_decoding.

`build(fluid)` (also used by tests/python/test_crf.py with rill) makes two programs:
- train: LoD features [T, F] -> fc -> emission [T, D]; linear_chain_crf against LoD labels
  (transition parameter 'crfw'), its mean as the loss, SGD; crf_decoding of the emission
  without and with the labels;
- padded: emission [N, S, D] with Length and labels [N, S, 1], linear_chain_crf (parameter
  'crfw2': all four outputs fetched) and crf_decoding without and with the labels.
The starting parameters are set from seeded numpy (not the initializers), so the file holds
them, the inputs, and Paddle's fetches: every output of the padded program, and for each
of STEPS training steps the loss, the per-sequence costs and both decodings, then the
trained parameters. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'crf')
D, F, N, S, STEPS, LR = 5, 6, 4, 6, 5, 0.5
SEQ_LENS = [3, 0, 6, 1, 4]
PAD_LENS = [2, 6, 0, 4]


def build(fluid):
    train, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(train, startup):
        feat = fluid.data('feat', [None, F], 'float32', lod_level=1)
        label = fluid.data('label', [None, 1], 'int64', lod_level=1)
        emission = fluid.layers.fc(feat, D, param_attr=fluid.ParamAttr(name='fc_w'),
                                   bias_attr=fluid.ParamAttr(name='fc_b'))
        cost = fluid.layers.linear_chain_crf(emission, label,
                                             param_attr=fluid.ParamAttr(name='crfw'))
        path = fluid.layers.crf_decoding(emission, param_attr=fluid.ParamAttr(name='crfw'))
        hits = fluid.layers.crf_decoding(emission, param_attr=fluid.ParamAttr(name='crfw'),
                                         label=label)
        loss = fluid.layers.mean(cost)
        fluid.optimizer.SGD(learning_rate=LR).minimize(loss)
    padded, pstartup = fluid.Program(), fluid.Program()
    with fluid.program_guard(padded, pstartup):
        xp = fluid.data('xp', [None, S, D], 'float32')
        yp = fluid.data('yp', [None, S, 1], 'int64')
        lp = fluid.data('lp', [None], 'int64')
        pcost = fluid.layers.linear_chain_crf(xp, yp, param_attr=fluid.ParamAttr(name='crfw2'),
                                              length=lp)
        ppath = fluid.layers.crf_decoding(xp, param_attr=fluid.ParamAttr(name='crfw2'),
                                          length=lp)
        phits = fluid.layers.crf_decoding(xp, param_attr=fluid.ParamAttr(name='crfw2'),
                                          length=lp, label=yp)
    op = [o for o in padded.global_block().ops if o.type == 'linear_chain_crf'][0]
    pfetch = [pcost.name, ppath.name, phits.name] + \
        [op.output(s)[0] for s in ('Alpha', 'EmissionExps', 'TransitionExps')]
    return {'train': (train, startup, [loss.name, cost.name, path.name, hits.name]),
            'padded': (padded, pstartup, pfetch)}


PADDED_KEYS = ('cost', 'path', 'hits', 'alpha', 'emission_exps', 'transition_exps')
TRAIN_KEYS = ('loss', 'cost', 'path', 'hits')


def inputs():
    rng = np.random.RandomState(20)
    t = sum(SEQ_LENS)
    data = {
        'feat': rng.randn(t, F).astype('float32'),
        'label': rng.randint(0, D, (t, 1)).astype('int64'),
        'fc_w': (rng.randn(F, D) * 0.5).astype('float32'),
        'fc_b': (rng.randn(D) * 0.1).astype('float32'),
        'crfw': (rng.randn(D + 2, D) * 0.3).astype('float32'),
        'xp': rng.randn(N, S, D).astype('float32') * 2,
        'yp': rng.randint(0, D, (N, S, 1)).astype('int64'),
        'lp': np.array(PAD_LENS, 'int64'),
        'crfw2': rng.randn(D + 2, D).astype('float32'),
    }
    return data


def main():
    import paddle.fluid as fluid
    progs = build(fluid)
    data = inputs()
    out = dict(data)
    exe = fluid.Executor(fluid.CPUPlace())
    place = fluid.CPUPlace()
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        for name in ('train', 'padded'):
            exe.run(progs[name][1])
        for p in ('fc_w', 'fc_b', 'crfw', 'crfw2'):
            scope.find_var(p).get_tensor().set(data[p], place)
        prog, _, fetch = progs['padded']
        vals = exe.run(prog, feed={k: data[k] for k in ('xp', 'yp', 'lp')}, fetch_list=fetch)
        for k, v in zip(PADDED_KEYS, vals):
            out['padded_' + k] = np.asarray(v)
        prog, _, fetch = progs['train']
        for step in range(STEPS):
            feed = {'feat': fluid.create_lod_tensor(data['feat'], [SEQ_LENS], place),
                    'label': fluid.create_lod_tensor(data['label'], [SEQ_LENS], place)}
            vals = exe.run(prog, feed=feed, fetch_list=fetch, return_numpy=False)
            for k, v in zip(TRAIN_KEYS, vals):
                out['step%d_%s' % (step, k)] = np.array(v)
        for p in ('fc_w', 'fc_b', 'crfw'):
            out['trained_' + p] = np.array(scope.find_var(p).get_tensor())
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)


if __name__ == '__main__':
    main()
