"""Sequence to sequence translation on paddle.dataset.wmt16, in the style of the Fluid 1.x
book: an LSTM encoder whose last step is the context, a DynamicRNN decoder trained on
the target words, and a While loop with beam_search decoding from saved parameters."""
import json
import random

import numpy as np

import paddle
import paddle.fluid as fluid
import paddle.fluid.layers as pd

DICT_SIZE = 24
WORD_DIM = 16
HIDDEN_DIM = 32
BEAM_SIZE = 2
MAX_LENGTH = 8
BATCH = 10
EPOCHS = 8
MODEL_DIR = 'machine_translation.params'


def encoder():
    src_word_id = pd.data(name='src_word_id', shape=[1], dtype='int64', lod_level=1)
    src_embedding = pd.embedding(input=src_word_id, size=[DICT_SIZE, WORD_DIM],
                                 dtype='float32', param_attr=fluid.ParamAttr(name='vemb'))
    fc1 = pd.fc(input=src_embedding, size=HIDDEN_DIM * 4, act='tanh',
                param_attr='enc_fc_w', bias_attr='enc_fc_b')
    lstm_hidden0, lstm_0 = pd.dynamic_lstm(input=fc1, size=HIDDEN_DIM * 4,
                                           param_attr='enc_lstm_w', bias_attr='enc_lstm_b')
    return pd.sequence_last_step(input=lstm_hidden0)


def train_decoder(context):
    trg_language_word = pd.data(name='target_language_word', shape=[1], dtype='int64',
                                lod_level=1)
    trg_embedding = pd.embedding(input=trg_language_word, size=[DICT_SIZE, WORD_DIM],
                                 dtype='float32', param_attr=fluid.ParamAttr(name='temb'))
    rnn = pd.DynamicRNN()
    with rnn.block():
        current_word = rnn.step_input(trg_embedding)
        pre_state = rnn.memory(init=context, need_reorder=True)
        current_state = pd.fc(input=[current_word, pre_state], size=HIDDEN_DIM, act='tanh',
                              param_attr=['dec_wx', 'dec_wh'], bias_attr='dec_b')
        current_score = pd.fc(input=current_state, size=DICT_SIZE, act='softmax',
                              param_attr='out_w', bias_attr='out_b')
        rnn.update_memory(pre_state, current_state)
        rnn.output(current_score)
    return rnn()


def decode(context):
    init_state = context
    array_len = pd.fill_constant(shape=[1], dtype='int64', value=MAX_LENGTH)
    counter = pd.zeros(shape=[1], dtype='int64', force_cpu=True)
    state_array = pd.create_array('float32')
    pd.array_write(init_state, array=state_array, i=counter)
    ids_array = pd.create_array('int64')
    scores_array = pd.create_array('float32')
    init_ids = pd.data(name='init_ids', shape=[1], dtype='int64', lod_level=2)
    init_scores = pd.data(name='init_scores', shape=[1], dtype='float32', lod_level=2)
    pd.array_write(init_ids, array=ids_array, i=counter)
    pd.array_write(init_scores, array=scores_array, i=counter)
    cond = pd.less_than(x=counter, y=array_len)
    while_op = pd.While(cond=cond)
    with while_op.block():
        pre_ids = pd.array_read(array=ids_array, i=counter)
        pre_state = pd.array_read(array=state_array, i=counter)
        pre_score = pd.array_read(array=scores_array, i=counter)
        pre_state_expanded = pd.sequence_expand(pre_state, pre_score)
        pre_ids_emb = pd.embedding(input=pre_ids, size=[DICT_SIZE, WORD_DIM],
                                   dtype='float32', param_attr=fluid.ParamAttr(name='temb'))
        current_state = pd.fc(input=[pre_state_expanded, pre_ids_emb], size=HIDDEN_DIM,
                              act='tanh', param_attr=['dec_wh', 'dec_wx'], bias_attr='dec_b')
        current_state_with_lod = pd.lod_reset(x=current_state, y=pre_score)
        current_score = pd.fc(input=current_state_with_lod, size=DICT_SIZE, act='softmax',
                              param_attr='out_w', bias_attr='out_b')
        topk_scores, topk_indices = pd.topk(current_score, k=BEAM_SIZE)
        accu_scores = pd.elementwise_add(x=pd.log(topk_scores),
                                         y=pd.reshape(pre_score, shape=[-1]), axis=0)
        selected_ids, selected_scores = pd.beam_search(
            pre_ids, pre_score, topk_indices, accu_scores, BEAM_SIZE, end_id=1, level=0)
        pd.increment(x=counter, value=1, in_place=True)
        pd.array_write(current_state, array=state_array, i=counter)
        pd.array_write(selected_ids, array=ids_array, i=counter)
        pd.array_write(selected_scores, array=scores_array, i=counter)
        length_cond = pd.less_than(x=counter, y=array_len)
        finish_cond = pd.logical_not(pd.is_empty(x=selected_ids))
        pd.logical_and(x=length_cond, y=finish_cond, out=cond)
    return pd.beam_search_decode(ids=ids_array, scores=scores_array, beam_size=BEAM_SIZE,
                                 end_id=1)


def to_lodtensor(data, place):
    lod = [[len(seq) for seq in data]]
    flat = np.concatenate([np.asarray(seq, dtype='int64') for seq in data]).reshape(-1, 1)
    return fluid.create_lod_tensor(flat, lod, place)


place = fluid.CPUPlace()
exe = fluid.Executor(place)

train_program, train_startup = fluid.Program(), fluid.Program()
train_program.random_seed = train_startup.random_seed = 1
random.seed(1)  # paddle.reader.shuffle's order, so that every run is the same
with fluid.program_guard(train_program, train_startup):
    rnn_out = train_decoder(encoder())
    label = pd.data(name='target_language_next_word', shape=[1], dtype='int64', lod_level=1)
    avg_cost = pd.mean(pd.cross_entropy(input=rnn_out, label=label))
    fluid.optimizer.Adagrad(
        learning_rate=0.1,
        regularization=fluid.regularizer.L2DecayRegularizer(regularization_coeff=1e-4)
    ).minimize(avg_cost)

train_reader = paddle.batch(
    paddle.reader.shuffle(paddle.dataset.wmt16.train(DICT_SIZE, DICT_SIZE), buf_size=1000),
    batch_size=BATCH)
exe.run(train_startup)
losses = []
for pass_id in range(EPOCHS):
    for data in train_reader():
        feed = {'src_word_id': to_lodtensor([d[0] for d in data], place),
                'target_language_word': to_lodtensor([d[1] for d in data], place),
                'target_language_next_word': to_lodtensor([d[2] for d in data], place)}
        cost, = exe.run(train_program, feed=feed, fetch_list=[avg_cost])
        losses.append(float(np.array(cost).ravel()[0]))
fluid.io.save_params(exe, MODEL_DIR, main_program=train_program)

infer_program, infer_startup = fluid.Program(), fluid.Program()
with fluid.program_guard(infer_program, infer_startup):
    translation_ids, translation_scores = decode(encoder())

test_data = next(paddle.batch(paddle.dataset.wmt16.test(DICT_SIZE, DICT_SIZE), 3)())
n = len(test_data)
feed = {'src_word_id': to_lodtensor([d[0] for d in test_data], place),
        'init_ids': fluid.create_lod_tensor(np.ones((n, 1), 'int64') * 0, [[1] * n, [1] * n],
                                            place),
        'init_scores': fluid.create_lod_tensor(np.ones((n, 1), 'float32'), [[1] * n, [1] * n],
                                               place)}


def translate():
    ids, scores = exe.run(infer_program, feed=feed,
                          fetch_list=[translation_ids, translation_scores],
                          return_numpy=False)
    return np.array(ids).ravel().tolist(), np.array(scores).ravel().tolist(), ids.lod()


expected = translate()  # with the trained parameters still in the scope
with fluid.scope_guard(fluid.core.Scope()):
    exe.run(infer_startup)
    fluid.io.load_params(exe, MODEL_DIR, main_program=infer_program)
    got = translate()

trg_dict = paddle.dataset.wmt16.get_dict('de', DICT_SIZE, reverse=True)
best = []
for i in range(n):
    start, end = got[2][0][i], got[2][0][i + 1]
    first = got[2][1][start]
    last = got[2][1][start + 1]
    best.append(' '.join(trg_dict[w] for w in got[0][first:last][1:-1]))
src_dict = paddle.dataset.wmt16.get_dict('en', DICT_SIZE, reverse=True)
sources = [' '.join(src_dict[w] for w in d[0][1:-1]) for d in test_data]
print('RESULT ' + json.dumps({'losses': losses, 'expected': expected[1], 'inferred': got[1],
                              'expected_ids': expected[0], 'inferred_ids': got[0],
                              'sources': sources, 'translations': best}))
