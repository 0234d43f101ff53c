"""Fluid 1.8's cell and decoder API (Paddle's layers/rnn.py): the cells RNNCell, GRUCell
and LSTMCell, `rnn` (a StaticRNN over a cell), the decoders Decoder, BeamSearchDecoder and
BasicDecoder with their helpers, and `dynamic_decode` (a While loop over tensor arrays).
Everything is built from ordinary ops, as Paddle builds it, so the programs, parameter
names and numbers are Paddle 1.8.5's. Re-exported by rill.layers
(doc/design/recurrent.md, "Cells and decoders")."""

import collections
import copy

import numpy as np

from . import layers
from .framework import Variable, unique_name
from .param_attr import ParamAttr

__all__ = ['RNNCell', 'GRUCell', 'LSTMCell', 'Decoder', 'BeamSearchDecoder', 'rnn',
           'dynamic_decode', 'DecodeHelper', 'TrainingHelper', 'GreedyEmbeddingHelper',
           'SampleEmbeddingHelper', 'BasicDecoder']


# ------------------------------------------------------- nested structures ----

def _flatten(x):
    """The leaves of a nest of lists, tuples (namedtuples too) and dicts (by sorted key)."""
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _flatten(x[k])]
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _flatten(item)]
    return [x]


def _pack(like, leaves):
    """`leaves` (in _flatten's order) put back into the shape of `like`."""
    it = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        if isinstance(s, (list, tuple)):
            items = [build(v) for v in s]
            if hasattr(s, '_fields'):
                return type(s)(*items)
            return type(s)(items)
        return next(it)
    return build(like)


def _map(fn, *nests):
    """fn over the leaves of nests of one structure, packed as the first."""
    flats = [_flatten(n) for n in nests]
    for n, f in zip(nests[1:], flats[1:]):
        if len(f) != len(flats[0]):
            raise ValueError('the structures %r and %r differ' % (nests[0], n))
    return _pack(nests[0], [fn(*leaves) for leaves in zip(*flats)])


def _check_var(x, what, layer, dtypes=None):
    if not isinstance(x, Variable):
        raise TypeError('%s: %s must be a Variable, not %r' % (layer, what, x))
    if dtypes and x.dtype.name not in dtypes:
        raise TypeError("%s: %s '%s' is %s, expected %s" %
                        (layer, what, x.name, x.dtype.name, ' or '.join(dtypes)))


_FLOATS = ('float32', 'float64')


# ------------------------------------------------------------ small pieces ----

def _item(x, index, axis=0):
    """x[index] along `axis`, the axis removed (Fluid's Variable indexing); index is an
    int or a one-element int Variable."""
    h = layers._Helper('slice')
    out = h.tmp(x.dtype.name)
    ins = {'Input': x}
    attrs = {'axes': [axis], 'decrease_axis': [axis]}
    if isinstance(index, Variable):
        ins['StartsTensorList'] = [index]
        ins['EndsTensorList'] = [index + 1]
        attrs.update(starts=[-1], ends=[-1], infer_flags=[-1])
    else:
        attrs.update(starts=[int(index)], ends=[int(index) + 1 if index != -1 else 10000000],
                     infer_flags=[1])
    h.append('slice', ins, {'Out': out}, attrs)
    return out


def _transpose_batch_time(x):
    return layers.transpose(x, [1, 0] + list(range(2, len(x.shape))))


def _times(*parts):
    """A 1-D int32 tensor of expand times from ints and one-element int32 Variables."""
    pieces = [p if isinstance(p, Variable) else layers.fill_constant([1], 'int32', int(p))
              for p in parts]
    t = layers.concat(pieces, axis=0) if len(pieces) > 1 else pieces[0]
    t.stop_gradient = True
    return t


def _expand(x, parts):
    if any(isinstance(p, Variable) for p in parts):
        return layers.expand(x, _times(*parts))
    return layers.expand(x, list(parts))


def _suffixed(attr, suffix):
    """A copy of ParamAttr `attr` whose name (when it has one) ends in suffix."""
    if attr is None or attr is False or attr.name is None:
        return attr
    named = copy.copy(attr)
    named.name = attr.name + suffix
    return named


class _Unit(object):
    """The parameters of a cell, created on its first call (the input size is known only
    then), named as Paddle's dygraph layers name them: '<name>/<Kind>_N.w_0'."""

    def __init__(self, name, kind, dtype):
        self.full_name = unique_name.generate(name + '/' + kind)
        self.dtype = dtype
        self.built = False

    def param(self, attr, shape, is_bias=False):
        h = layers._Helper(self.full_name, self.full_name)
        return h.param(attr, shape, self.dtype, is_bias=is_bias)


def _init_cell(cell, layer, kind, hidden_size, param_attr, bias_attr, dtype, name):
    """The arguments every cell of Paddle's BasicXXXUnit kind takes, checked and kept."""
    if not isinstance(hidden_size, int):
        raise TypeError('%s: hidden_size must be an int, not %r' % (layer, hidden_size))
    if dtype not in _FLOATS:
        raise TypeError('%s: dtype must be float32 or float64, not %r' % (layer, dtype))
    cell.hidden_size = hidden_size
    cell._unit = _Unit(name, kind, dtype)
    cell._param_attr = param_attr
    cell._bias_attr = bias_attr


# ------------------------------------------------------------------- cells ----

class RNNCell(object):
    """The base of the cells: `call(inputs, states)` returns (outputs, new_states);
    state_shape (and state_dtype) describe the states get_initial_states makes."""

    def call(self, inputs, states, **kwargs):
        raise NotImplementedError('RNNCell must implent the call function.')

    def __call__(self, inputs, states, **kwargs):
        return self.call(inputs, states, **kwargs)

    def get_initial_states(self, batch_ref, shape=None, dtype='float32', init_value=0,
                           batch_dim_idx=0):
        """States of `shape` (state_shape by default; the batch dim is prepended) filled
        with init_value, their batch size taken from the first of batch_ref's tensors at
        dim batch_dim_idx (fill_constant_batch_size_like)."""
        ref = _flatten(batch_ref)[0]
        _check_var(ref, 'batch_ref', 'RNNCell', ('float32', 'float64', 'int32', 'int64'))
        if dtype not in _FLOATS:
            raise TypeError('RNNCell: dtype must be float32 or float64, not %r' % (dtype,))
        shapes = self.state_shape if shape is None else shape

        def is_shape(s):
            return isinstance(s, (list, tuple)) and all(isinstance(d, int) for d in s)

        def walk(s):
            if is_shape(s):
                return [list(s) if s and s[0] == -1 else [-1] + list(s)]
            if isinstance(s, int):
                return [[-1, s]]
            return [leaf for item in s for leaf in walk(item)]

        def repack(s, it):
            if is_shape(s) or isinstance(s, int):
                return next(it)
            return type(s)(repack(item, it) for item in s)

        try:
            dtypes = self.state_dtype if dtype is None else dtype
        except NotImplementedError:
            dtypes = 'float32'
        flat_shapes = walk(shapes)
        flat_dtypes = _flatten(dtypes)
        if len(flat_dtypes) == 1:
            flat_dtypes = flat_dtypes * len(flat_shapes)
        states = [layers.fill_constant_batch_size_like(ref, s, d, init_value,
                                                       input_dim_idx=batch_dim_idx)
                  for s, d in zip(flat_shapes, flat_dtypes)]
        return repack(shapes, iter(states))

    @property
    def state_shape(self):
        raise NotImplementedError('Please add implementaion for `state_shape` in the used '
                                  'cell.')

    @property
    def state_dtype(self):
        raise NotImplementedError('Please add implementaion for `state_dtype` in the used '
                                  'cell.')


class GRUCell(RNNCell):
    """Paddle's BasicGRUUnit as a cell: with x_h = [inputs, h],
    [r, u] = gate_activation(x_h W_gate + b_gate), c = activation([inputs, r h] W_cand +
    b_cand), h' = u h + (1 - u) c. Parameters '<name>/BasicGRUUnit_N.w_0' [I + H, 2H],
    '.w_1' [I + H, H], '.b_0' [2H], '.b_1' [H]; a named param_attr / bias_attr gives
    '<name>_gate' and '<name>_candidate'."""

    def __init__(self, hidden_size, param_attr=None, bias_attr=None, gate_activation=None,
                 activation=None, dtype='float32', name='GRUCell'):
        _init_cell(self, 'GRUCell', 'BasicGRUUnit', hidden_size, param_attr, bias_attr, dtype, name)
        self._gate_act = gate_activation or layers.sigmoid
        self._act = activation or layers.tanh

    def _build(self, inputs):
        u, H = self._unit, self.hidden_size
        size = inputs.shape[-1]
        if size <= 0:
            raise ValueError('GRUCell: the input size (last dim of %s) must be known'
                             % inputs.name)
        pa, ba = ParamAttr._to_attr(self._param_attr), ParamAttr._to_attr(self._bias_attr)
        self._w_gate = u.param(_suffixed(pa, '_gate'), [size + H, 2 * H])
        self._w_cand = u.param(_suffixed(pa, '_candidate'), [size + H, H])
        self._b_gate = u.param(_suffixed(ba, '_gate'), [2 * H], is_bias=True)
        self._b_cand = u.param(_suffixed(ba, '_candidate'), [H], is_bias=True)
        u.built = True

    def call(self, inputs, states):
        _check_var(inputs, 'inputs', 'GRUCell', _FLOATS)
        _check_var(states, 'states', 'GRUCell', _FLOATS)
        if not self._unit.built:
            self._build(inputs)
        gates = layers.matmul(layers.concat([inputs, states], 1), self._w_gate)
        gates = self._gate_act(layers.elementwise_add(gates, self._b_gate))
        r, u = layers.split(gates, num_or_sections=2, dim=1)
        cand = layers.matmul(layers.concat([inputs, r * states], 1), self._w_cand)
        c = self._act(layers.elementwise_add(cand, self._b_cand))
        h = u * states + layers.scale(u, scale=-1.0, bias=1.0) * c
        return h, h

    @property
    def state_shape(self):
        return [self.hidden_size]


class LSTMCell(RNNCell):
    """Paddle's BasicLSTMUnit as a cell: [i, j, f, o] = [inputs, h] W + b,
    c' = c sigmoid(f + forget_bias) + sigmoid(i) tanh(j), h' = tanh(c') sigmoid(o)
    (sigmoid and tanh whatever gate_activation and activation say, as in Paddle 1.8.5).
    Parameters '<name>/BasicLSTMUnit_N.w_0' [I + H, 4H] and '.b_0' [4H]; states [h, c]."""

    def __init__(self, hidden_size, param_attr=None, bias_attr=None, gate_activation=None,
                 activation=None, forget_bias=1.0, dtype='float32', name='LSTMCell'):
        _init_cell(self, 'LSTMCell', 'BasicLSTMUnit', hidden_size, param_attr, bias_attr, dtype, name)
        self._forget_bias = layers.fill_constant([1], dtype, forget_bias)
        self._forget_bias.stop_gradient = False

    def call(self, inputs, states):
        _check_var(inputs, 'inputs', 'LSTMCell', _FLOATS)
        if not isinstance(states, list):
            raise TypeError('LSTMCell: states must be a list [hidden, cell], not %r'
                            % (states,))
        for i, s in enumerate(states):
            _check_var(s, 'state[%d]' % i, 'LSTMCell', _FLOATS)
        pre_h, pre_c = states
        u, H = self._unit, self.hidden_size
        if not u.built:
            size = inputs.shape[-1]
            if size <= 0:
                raise ValueError('LSTMCell: the input size (last dim of %s) must be known'
                                 % inputs.name)
            self._w = u.param(self._param_attr, [size + H, 4 * H])
            self._b = u.param(self._bias_attr, [4 * H], is_bias=True)
            u.built = True
        gates = layers.matmul(layers.concat([inputs, pre_h], 1), self._w)
        gates = layers.elementwise_add(gates, self._b)
        i, j, f, o = layers.split(gates, num_or_sections=4, dim=-1)
        forget = layers.sigmoid(layers.elementwise_add(f, self._forget_bias))
        c = layers.elementwise_add(layers.elementwise_mul(pre_c, forget),
                                   layers.elementwise_mul(layers.sigmoid(i), layers.tanh(j)))
        h = layers.tanh(c) * layers.sigmoid(o)
        return h, [h, c]

    @property
    def state_shape(self):
        return [[self.hidden_size], [self.hidden_size]]


# --------------------------------------------------------------------- rnn ----

def rnn(cell, inputs, initial_states=None, sequence_length=None, time_major=False,
        is_reverse=False, **kwargs):
    """Runs `cell` over the time steps of inputs ([batch, time, ...], or [time, batch,
    ...] with time_major) in a StaticRNN. With sequence_length ([batch] int), a row's
    states stop changing after its length (its outputs past it are still computed);
    is_reverse runs from the last step to the first. Returns (outputs in inputs' layout,
    final states)."""
    if not isinstance(inputs, (Variable, list, tuple)):
        raise TypeError('rnn: inputs must be a Variable or a list / tuple of Variables, '
                        'not %r' % (inputs,))
    for i, x in enumerate(_flatten(inputs)):
        _check_var(x, 'inputs[%d]' % i, 'rnn', _FLOATS)
    if initial_states is not None:
        for i, s in enumerate(_flatten(initial_states)):
            _check_var(s, 'initial_states[%d]' % i, 'rnn', _FLOATS)
    if sequence_length is not None:
        _check_var(sequence_length, 'sequence_length', 'rnn')

    if initial_states is None:
        initial_states = cell.get_initial_states(batch_ref=inputs,
                                                 batch_dim_idx=1 if time_major else 0)

    def trainable(s):
        s.stop_gradient = False
        return s
    initial_states = _map(trainable, initial_states)
    if not time_major:
        inputs = _map(_transpose_batch_time, inputs)
    mask = None
    if sequence_length is not None:
        steps = _item(layers.shape(_flatten(inputs)[0]), 0)
        mask = layers.sequence_mask(sequence_length, maxlen=steps,
                                    dtype=_flatten(initial_states)[0].dtype.name)
        mask = layers.transpose(mask, [1, 0])
    if is_reverse:
        inputs = _map(lambda x: layers.reverse(x, axis=[0]), inputs)
        if mask is not None:
            mask = layers.reverse(mask, axis=[0])

    loop = layers.StaticRNN()
    with loop.step():
        step_in = _map(loop.step_input, inputs)
        states = _map(lambda s: loop.memory(init=s), initial_states)
        outputs, new_states = cell.call(step_in, _map(lambda x: x, states), **kwargs)
        if len(_flatten(states)) != len(_flatten(new_states)):
            raise ValueError('rnn: the cell returned %d states for %d'
                             % (len(_flatten(new_states)), len(_flatten(states))))
        if mask is not None:
            step_mask = loop.step_input(mask)

            def keep(old, new):
                return layers.elementwise_sub(
                    layers.elementwise_mul(new, step_mask, axis=0),
                    layers.elementwise_mul(old, layers.scale(step_mask, bias=-1.0), axis=0))
            new_states = _map(keep, states, new_states)
        _map(loop.update_memory, states, new_states)
        flat_out = _flatten(outputs)
        for o in flat_out:
            loop.step_output(o)
        for s in _flatten(new_states):
            loop.step_output(s)
    res = loop()
    res = res if isinstance(res, list) else [res]
    final_outputs = _pack(outputs, res[:len(flat_out)])
    final_states = _pack(new_states, [_item(x, -1) for x in res[len(flat_out):]])
    if is_reverse:
        final_outputs = _map(lambda x: layers.reverse(x, axis=[0]), final_outputs)
    if not time_major:
        final_outputs = _map(_transpose_batch_time, final_outputs)
    return final_outputs, final_states


# ---------------------------------------------------------------- decoders ----

class Decoder(object):
    """The base of the decoders dynamic_decode runs: initialize(inits) -> (inputs,
    states, finished); step(time, inputs, states) -> (outputs, next_states, next_inputs,
    finished); finalize(outputs, final_states, sequence_lengths) -> (outputs, states)."""

    def initialize(self, inits):
        raise NotImplementedError

    def step(self, time, inputs, states, **kwargs):
        raise NotImplementedError

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError


class BeamSearchDecoder(Decoder):
    """Beam search over a cell: each source keeps beam_size hypotheses [batch, beam];
    each step the cell's logits (through output_fn) give log_softmax scores added to the
    hypotheses' log probabilities (a finished hypothesis offers end_token alone at no
    cost), and the top beam_size of the beam * vocab candidates continue. finalize
    traces the predicted ids back through the parents (gather_tree)."""

    OutputWrapper = collections.namedtuple('OutputWrapper',
                                           ('scores', 'predicted_ids', 'parent_ids'))
    StateWrapper = collections.namedtuple('StateWrapper',
                                          ('cell_states', 'log_probs', 'finished', 'lengths'))

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None,
                 output_fn=None):
        self.cell = cell
        self.embedding_fn = embedding_fn
        self.output_fn = output_fn
        self.start_token = start_token
        self.end_token = end_token
        self.beam_size = beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """x [batch, ...] -> [batch * beam_size, ...], each row repeated beam_size times
        in a row."""
        _check_var(x, 'x', 'BeamSearchDecoder.tile_beam_merge_with_batch')
        x = layers.unsqueeze(x, [1])
        times = [1] * len(x.shape)
        times[1] = beam_size
        x = layers.expand(x, times)
        x = layers.transpose(x, list(range(2, len(x.shape))) + [0, 1])
        x = layers.reshape(x, [0] * (len(x.shape) - 2) + [-1])
        return layers.transpose(x, [len(x.shape) - 1] + list(range(0, len(x.shape) - 1)))

    def _split_batch_beams(self, x):
        _check_var(x, 'x', 'BeamSearchDecoder._split_batch_beams')
        return layers.reshape(x, [-1, self.beam_size] + list(x.shape[1:]))

    def _merge_batch_beams(self, x):
        _check_var(x, 'x', 'BeamSearchDecoder._merge_batch_beams')
        return layers.reshape(x, [-1] + list(x.shape[2:]))

    def _expand_to_beam_size(self, x):
        _check_var(x, 'x', 'BeamSearchDecoder._expand_to_beam_size')
        x = layers.unsqueeze(x, [1])
        times = [1] * len(x.shape)
        times[1] = self.beam_size
        return layers.expand(x, times)

    def _mask_probs(self, probs, finished):
        finished = layers.cast(finished, probs.dtype.name)
        ended = layers.elementwise_mul(
            layers.expand(layers.unsqueeze(finished, [2]), [1, 1, self.vocab_size]),
            self.noend_mask_tensor, axis=-1)
        return layers.elementwise_sub(
            ended, layers.elementwise_mul(probs, layers.scale(finished, bias=-1.0), axis=0))

    def _gather(self, x, indices, batch_size):
        """x[b, indices[b, k]] for every batch entry b and beam k."""
        if batch_size.dtype != indices.dtype:
            batch_size = layers.cast(batch_size, indices.dtype.name)
        batch_size.stop_gradient = True
        pos = layers.range(0, batch_size, 1, indices.dtype.name)
        pos = layers.expand(layers.unsqueeze(pos, [1]), [1, self.beam_size])
        coords = layers.stack([pos, indices], axis=2)
        coords.stop_gradient = True
        return layers.gather_nd(x, coords)

    def initialize(self, initial_cell_states):
        self.kinf = 1e9
        state = _flatten(initial_cell_states)[0]
        self.batch_size = _item(layers.shape(state), 0)
        self.start_token_tensor = layers.fill_constant([1], 'int64', self.start_token)
        self.end_token_tensor = layers.fill_constant([1], 'int64', self.end_token)
        init_cell_states = _map(self._expand_to_beam_size, initial_cell_states)
        init_inputs = _expand(self.start_token_tensor, [self.batch_size])
        init_inputs = layers.expand(layers.unsqueeze(init_inputs, [1]), [1, self.beam_size])
        first = np.array([[0.0] + [-self.kinf] * (self.beam_size - 1)], dtype='float32')
        log_probs = _expand(layers.assign(first), [self.batch_size, 1])
        init_finished = layers.fill_constant_batch_size_like(
            state, [-1, self.beam_size], 'bool', False)
        init_lengths = layers.zeros_like(init_inputs)
        if self.embedding_fn:
            init_inputs = self.embedding_fn(init_inputs)
        return (init_inputs,
                self.StateWrapper(init_cell_states, log_probs, init_finished, init_lengths),
                init_finished)

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        self.vocab_size = logits.shape[-1]
        self.vocab_size_tensor = layers.fill_constant([1], 'int64', self.vocab_size)
        noend = [-self.kinf] * self.vocab_size
        noend[self.end_token] = 0
        self.noend_mask_tensor = layers.assign(np.array(noend, 'float32'))
        step_log_probs = layers.log(layers.softmax(logits))
        step_log_probs = self._mask_probs(step_log_probs, beam_state.finished)
        log_probs = layers.elementwise_add(step_log_probs, beam_state.log_probs, axis=0)
        flat = layers.reshape(log_probs, [-1, self.beam_size * self.vocab_size])
        topk_scores, topk_indices = layers.topk(flat, k=self.beam_size)
        beam_indices = layers.elementwise_floordiv(topk_indices, self.vocab_size_tensor)
        token_indices = layers.elementwise_mod(topk_indices, self.vocab_size_tensor)
        next_log_probs = self._gather(
            layers.reshape(log_probs, [-1, self.beam_size * self.vocab_size]), topk_indices,
            self.batch_size)
        next_cell_states = _map(lambda x: self._gather(x, beam_indices, self.batch_size),
                                next_cell_states)
        next_finished = self._gather(beam_state.finished, beam_indices, self.batch_size)
        next_lengths = self._gather(beam_state.lengths, beam_indices, self.batch_size)
        next_lengths = next_lengths + layers.cast(layers.logical_not(next_finished),
                                                  beam_state.lengths.dtype.name)
        next_finished = layers.logical_or(next_finished,
                                          layers.equal(token_indices, self.end_token_tensor))
        return (self.OutputWrapper(topk_scores, token_indices, beam_indices),
                self.StateWrapper(next_cell_states, next_log_probs, next_finished,
                                  next_lengths))

    def step(self, time, inputs, states, **kwargs):
        inputs = _map(self._merge_batch_beams, inputs)
        cell_states = _map(self._merge_batch_beams, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = _map(self._split_batch_beams, cell_outputs)
        next_cell_states = _map(self._split_batch_beams, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        out, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        sample_ids = out.predicted_ids
        sample_ids.stop_gradient = True
        next_inputs = self.embedding_fn(sample_ids) if self.embedding_fn else sample_ids
        return out, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        return layers.gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states


def _array_in_parent(dtype):
    """An empty tensor array declared in the block enclosing the current one."""
    prog = layers.default_main_program()
    parent = prog.block(prog.current_block().parent_idx)
    return parent.create_var(name=unique_name.generate('array') + '.out', dtype=dtype,
                             type=layers._LOD_TENSOR_ARRAY)


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False,
                   impute_finished=False, is_test=False, return_length=False, **kwargs):
    """Runs decoder.step in a While loop until every entry has finished (or
    max_step_num steps have passed the first), each step's outputs written to tensor
    arrays and stacked after the loop ([batch, time, ...] unless output_time_major).
    impute_finished keeps a finished entry's states. Returns (final outputs, final
    states), and the sequence lengths with return_length."""
    initial_inputs, initial_states, initial_finished = decoder.initialize(inits)
    global_inputs, global_states, global_finished = \
        initial_inputs, initial_states, initial_finished
    global_finished.stop_gradient = True
    step_idx = layers.fill_constant([1], 'int64', 0)
    cond = layers.logical_not(layers.reduce_all(initial_finished))
    if max_step_num is not None:
        max_step_num = layers.fill_constant([1], 'int64', max_step_num)
    loop = layers.While(cond, is_test=is_test)
    sequence_lengths = layers.cast(layers.zeros_like(initial_finished), 'int64')
    sequence_lengths.stop_gradient = True
    if is_test:
        inputs = _map(lambda x: x, initial_inputs)
        states = _map(lambda x: x, initial_states)
    else:
        inputs_arrays = _map(lambda x: layers.array_write(x, step_idx), initial_inputs)
        states_arrays = _map(lambda x: layers.array_write(x, step_idx), initial_states)

    def keep_finished(state, new_state, step_mask):
        dtype = state.dtype.name
        if dtype == 'bool':
            state = layers.cast(state, 'float32')
            new_state = layers.cast(new_state, 'float32')
        if step_mask.dtype != state.dtype:
            step_mask = layers.cast(step_mask, state.dtype.name)
            step_mask.stop_gradient = True
        out = layers.elementwise_sub(
            layers.elementwise_mul(state, step_mask, axis=0),
            layers.elementwise_mul(new_state, layers.scale(step_mask, bias=-1.0), axis=0))
        return layers.cast(out, dtype) if dtype == 'bool' else out

    with loop.block():
        if not is_test:
            inputs = _map(lambda a: layers.array_read(a, step_idx), inputs_arrays)
            states = _map(lambda a: layers.array_read(a, step_idx), states_arrays)
        outputs, next_states, next_inputs, next_finished = decoder.step(
            step_idx, inputs, states, **kwargs)
        next_finished = layers.logical_or(next_finished, global_finished)
        next_sequence_lengths = layers.elementwise_add(
            sequence_lengths,
            layers.cast(layers.logical_not(global_finished), sequence_lengths.dtype.name))
        if impute_finished:
            next_states = _map(lambda x, y: keep_finished(x, y, global_finished),
                               states, next_states)
        outputs_arrays = _map(lambda x: _array_in_parent(x.dtype.name), outputs)
        _map(lambda x, a: layers.array_write(x, step_idx, array=a), outputs, outputs_arrays)
        layers.increment(step_idx, 1.0, in_place=True)
        if is_test:
            _map(layers.assign, next_inputs, global_inputs)
            _map(layers.assign, next_states, global_states)
        else:
            _map(lambda x, a: layers.array_write(x, step_idx, array=a), next_inputs,
                 inputs_arrays)
            _map(lambda x, a: layers.array_write(x, step_idx, array=a), next_states,
                 states_arrays)
        layers.assign(next_finished, global_finished)
        layers.assign(next_sequence_lengths, sequence_lengths)
        alive = layers.logical_not(layers.reduce_all(global_finished))
        if max_step_num is not None:
            layers.logical_and(alive, layers.less_equal(step_idx, max_step_num), out=cond)
        else:
            layers.logical_not(layers.reduce_all(global_finished), out=cond)

    final_outputs = _map(
        lambda a: layers.tensor_array_to_tensor(a, axis=0, use_stack=True)[0], outputs_arrays)
    if is_test:
        final_states = global_states
    else:
        final_states = _map(lambda a: layers.array_read(a, step_idx), states_arrays)
    try:
        final_outputs, final_states = decoder.finalize(final_outputs, final_states,
                                                       sequence_lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        final_outputs = _map(_transpose_batch_time, final_outputs)
    if return_length:
        return final_outputs, final_states, sequence_lengths
    return final_outputs, final_states


# ----------------------------------------------------------------- helpers ----

class DecodeHelper(object):
    """How BasicDecoder starts, samples and feeds the next step: initialize() ->
    (inputs, finished); sample(time, outputs, states) -> ids; next_inputs(time, outputs,
    states, sample_ids) -> (finished, next_inputs, next_states)."""

    def initialize(self):
        pass

    def sample(self, time, outputs, states):
        pass

    def next_inputs(self, time, outputs, states, sample_ids):
        pass


class TrainingHelper(DecodeHelper):
    """Teacher forcing: step t reads inputs[:, t] (inputs[t] with time_major); an entry
    has finished once t + 1 reaches its sequence_length; samples are the argmax."""

    def __init__(self, inputs, sequence_length, time_major=False):
        self.inputs = inputs
        self.sequence_length = sequence_length
        self.time_major = time_major

        def pad_time(x):
            if time_major:
                pads = [0, 1] + [0, 0] * (len(x.shape) - 1)
            else:
                pads = [0, 0, 0, 1] + [0, 0] * (len(x.shape) - 2)
            return layers.pad(x, paddings=pads)
        self.inputs_ = _map(pad_time, self.inputs)

    def initialize(self):
        zero = layers.fill_constant([1], self.sequence_length.dtype.name, 0)
        init_finished = layers.equal(self.sequence_length, zero)
        init_inputs = _map(lambda x: _item(x, 0, 0 if self.time_major else 1), self.inputs)
        return init_inputs, init_finished

    def sample(self, time, outputs, states):
        return layers.argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        if time.dtype.name != 'int32':
            time = layers.cast(time, 'int32')
        if self.sequence_length.dtype != time.dtype:
            self.sequence_length = layers.cast(self.sequence_length, time.dtype.name)
        next_time = time + 1
        finished = layers.less_equal(self.sequence_length, next_time)
        axis = 0 if self.time_major else 1
        next_inputs = _map(lambda x: _item(x, next_time, axis), self.inputs_)
        return finished, next_inputs, states


class GreedyEmbeddingHelper(DecodeHelper):
    """Greedy decoding: each step's sample is the argmax of the outputs, embedded by
    embedding_fn as the next input; an entry has finished when it samples end_token."""

    def __init__(self, embedding_fn, start_tokens, end_token):
        self.embedding_fn = embedding_fn
        self.start_tokens = start_tokens
        self.end_token = layers.fill_constant([1], 'int64', end_token)

    def initialize(self):
        init_finished = layers.fill_constant_batch_size_like(self.start_tokens, [-1], 'bool',
                                                             False)
        return self.embedding_fn(self.start_tokens), init_finished

    def sample(self, time, outputs, states):
        return layers.argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        finished = layers.equal(sample_ids, self.end_token)
        return finished, self.embedding_fn(sample_ids), states


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """GreedyEmbeddingHelper drawing each sample from softmax(outputs /
    softmax_temperature) (the sampling_id op) instead of taking the argmax."""

    def __init__(self, embedding_fn, start_tokens, end_token, softmax_temperature=None,
                 seed=None):
        super(SampleEmbeddingHelper, self).__init__(embedding_fn, start_tokens, end_token)
        self.softmax_temperature = None if softmax_temperature is None else \
            layers.fill_constant([1], 'float32', softmax_temperature)
        self.seed = seed

    def sample(self, time, outputs, states):
        logits = outputs
        if self.softmax_temperature is not None:
            logits = outputs / self.softmax_temperature
        probs = layers.softmax(logits)
        probs.stop_gradient = True
        return layers.sampling_id(probs, seed=self.seed or 0,
                                 dtype=self.start_tokens.dtype.name)


class BasicDecoder(Decoder):
    """A cell, an optional output_fn and a DecodeHelper: each step runs the cell,
    samples with the helper and takes the helper's next inputs. Outputs are
    (cell_outputs, sample_ids)."""

    OutputWrapper = collections.namedtuple('OutputWrapper', ('cell_outputs', 'sample_ids'))

    def __init__(self, cell, helper, output_fn=None):
        self.cell = cell
        self.helper = helper
        self.output_fn = output_fn

    def initialize(self, initial_cell_states):
        inputs, finished = self.helper.initialize()
        return inputs, initial_cell_states, finished

    def step(self, time, inputs, states, **kwargs):
        cell_outputs, cell_states = self.cell(inputs, states, **kwargs)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        sample_ids = self.helper.sample(time=time, outputs=cell_outputs, states=cell_states)
        sample_ids.stop_gradient = True
        finished, next_inputs, next_states = self.helper.next_inputs(
            time=time, outputs=cell_outputs, states=cell_states, sample_ids=sample_ids)
        return self.OutputWrapper(cell_outputs, sample_ids), next_states, next_inputs, finished
