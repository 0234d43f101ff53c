"""Records, under PaddlePaddle 1.8.5, the program fluid.layers.lstm writes (Paddle's CPU
build cannot run its cudnn_lstm op, so there are no numbers): for each case of CASES the
cudnn_lstm op's slots and attributes, the gradient op append_backward adds, the weight
parameter's shape and dtype and the startup op that initializes it. Writes
cudnn_lstm/programs.json for tests/python/test_cudnn_lstm.py, and the training programs
of `train_program` as Paddle serializes them (cudnn_lstm/train_<dropout>.main and
.startup), which rill must load and train."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (T, N, I, hidden, layers, dropout, bidirectional, is_test, dtype, seed, initializer)
CASES = {
    'one_layer': (5, 3, 4, 6, 1, 0.0, False, False, 'float32', -1, None),
    'two_layers_bidirectional': (4, 2, 3, 5, 2, 0.2, True, False, 'float32', 7, None),
    'three_layers_test_float64': (3, 2, 2, 3, 3, 0.0, False, True, 'float64', -1, 'constant'),
}


def build(fluid, case):
    """The program of `case`, built with `fluid` (Paddle's or rill's): lstm over fed x,
    h0, c0, the mean of its output as the loss, and the backward unless is_test."""
    T, N, I, H, L, p, bi, is_test, dtype, seed, init = CASES[case]
    D = 2 if bi else 1
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [T, N, I], dtype)
        h0 = fluid.data('h0', [L * D, N, H], dtype)
        c0 = fluid.data('c0', [L * D, N, H], dtype)
        kw = {}
        if init == 'constant':
            kw['default_initializer'] = fluid.initializer.Constant(0.25)
        out, last_h, last_c = fluid.layers.lstm(x, h0, c0, T, H, L, dropout_prob=p,
                                                is_bidirec=bi, is_test=is_test, seed=seed, **kw)
        loss = fluid.layers.mean(out)
        if not is_test:
            fluid.backward.append_backward(loss)
    return main, startup


def slots(op, names, get):
    return {k: list(get(k)) for k in sorted(names)}


def record(fluid, case):
    with fluid.unique_name.guard():
        main, startup = build(fluid, case)
    block = main.global_block()
    ops = {}
    for op in block.ops:
        if op.type in ('cudnn_lstm', 'cudnn_lstm_grad'):
            ops[op.type] = {
                'inputs': slots(op, op.input_names, op.input),
                'outputs': slots(op, op.output_names, op.output),
                'attrs': {a: op.attr(a) for a in sorted(op.attr_names)
                          if not a.startswith('op_')},
            }
    fwd = ops['cudnn_lstm']
    w = block.var(fwd['inputs']['W'][0])
    cache = block.var(fwd['inputs']['Cache'][0])
    init = [op for op in startup.global_block().ops if w.name in op.output_arg_names][0]
    return {
        'case': list(CASES[case]),
        'ops': ops,
        'weight': {'name': w.name, 'shape': list(w.shape), 'dtype': str(w.dtype),
                   'persistable': w.persistable},
        'cache': {'type': str(cache.type), 'persistable': cache.persistable},
        'weight_init': {'type': init.type,
                        'attrs': {a: init.attr(a) for a in sorted(init.attr_names)
                                  if a in ('shape', 'min', 'max', 'value', 'seed', 'dtype')}},
    }


def train_program(fluid, dropout):
    """A two-layer lstm (T 6, N 8, I 3, H 8; zero initial states) regressing fed y
    [6, 8, 8] under Adam; Paddle's default seed (-1). One direction: Paddle infers a
    bidirectional Out as [T, N, H] at build time, so y could not be subtracted."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [6, 8, 3], 'float32')
        y = fluid.data('y', [6, 8, 8], 'float32')
        h0 = fluid.layers.fill_constant([2, 8, 8], 'float32', 0.0)
        c0 = fluid.layers.fill_constant([2, 8, 8], 'float32', 0.0)
        out, _, _ = fluid.layers.lstm(x, h0, c0, 6, 8, 2, dropout_prob=dropout)
        loss = fluid.layers.reduce_mean(fluid.layers.square(out - y))
        fluid.optimizer.Adam(0.02).minimize(loss)
    return main, startup, loss


if __name__ == '__main__':
    import paddle.fluid
    out = {case: record(paddle.fluid, case) for case in sorted(CASES)}
    os.makedirs(os.path.join(HERE, 'cudnn_lstm'), exist_ok=True)
    with open(os.path.join(HERE, 'cudnn_lstm', 'programs.json'), 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write('\n')
    for dropout in (0.0, 0.3):
        main, startup, _ = train_program(paddle.fluid, dropout)
        stem = os.path.join(HERE, 'cudnn_lstm', 'train_%g' % dropout)
        for prog, ext in ((main, '.main'), (startup, '.startup')):
            with open(stem + ext, 'wb') as f:
                f.write(prog.desc.serialize_to_string())
