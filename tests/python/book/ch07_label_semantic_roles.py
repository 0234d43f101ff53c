"""Semantic role labelling on paddle.dataset.conll05 in the style of the Fluid 1.x book's
chapter 07, smaller: eight embedded features (the word table pretrained and frozen),
stacked dynamic_lstm layers in alternating directions mixed by fcs, linear_chain_crf
trained by SGD under exponential_decay, crf_decoding scored by a ChunkEvaluator, and the
features saved as an inference model."""
import json
import random

import numpy as np

import paddle
import paddle.dataset.conll05 as conll05
import paddle.fluid as fluid

word_dict, verb_dict, label_dict = conll05.get_dict()
word_dict_len = len(word_dict)
label_dict_len = len(label_dict)
pred_dict_len = len(verb_dict)

mark_dict_len = 2
word_dim = 32
mark_dim = 5
hidden_dim = 32
depth = 4
mix_hidden_lr = 1e-1
IS_SPARSE = True
PASS_NUM = 8
BATCH_SIZE = 10
embedding_name = 'emb'
MODEL_DIR = 'label_semantic_roles.inference.model'
FEEDS = ['word_data', 'verb_data', 'ctx_n2_data', 'ctx_n1_data', 'ctx_0_data', 'ctx_p1_data',
         'ctx_p2_data', 'mark_data']


def load_parameter(file_name, h, w):
    with open(file_name, 'rb') as f:
        f.read(16)  # the header
        return np.fromfile(f, dtype=np.float32).reshape(h, w)


def db_lstm(word, predicate, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, mark):
    predicate_embedding = fluid.embedding(
        input=predicate, size=[pred_dict_len, word_dim], dtype='float32',
        is_sparse=IS_SPARSE, param_attr='vemb')
    mark_embedding = fluid.embedding(
        input=mark, size=[mark_dict_len, mark_dim], dtype='float32', is_sparse=IS_SPARSE)
    emb_layers = [
        fluid.embedding(size=[word_dict_len, word_dim], input=x,
                        param_attr=fluid.ParamAttr(name=embedding_name, trainable=False))
        for x in [word, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2]]
    emb_layers.append(predicate_embedding)
    emb_layers.append(mark_embedding)
    hidden_0 = fluid.layers.sums(
        input=[fluid.layers.fc(input=emb, size=hidden_dim, act='tanh') for emb in emb_layers])
    lstm_0 = fluid.layers.dynamic_lstm(
        input=hidden_0, size=hidden_dim, candidate_activation='relu',
        gate_activation='sigmoid', cell_activation='sigmoid')
    input_tmp = [hidden_0, lstm_0]
    for i in range(1, depth):
        mix_hidden = fluid.layers.sums(input=[
            fluid.layers.fc(input=input_tmp[0], size=hidden_dim, act='tanh'),
            fluid.layers.fc(input=input_tmp[1], size=hidden_dim, act='tanh')])
        lstm = fluid.layers.dynamic_lstm(
            input=mix_hidden, size=hidden_dim, candidate_activation='relu',
            gate_activation='sigmoid', cell_activation='sigmoid', is_reverse=((i % 2) == 1))
        input_tmp = [mix_hidden, lstm]
    return fluid.layers.sums(input=[
        fluid.layers.fc(input=input_tmp[0], size=label_dict_len, act='tanh'),
        fluid.layers.fc(input=input_tmp[1], size=label_dict_len, act='tanh')])


def lod_input(name):
    return fluid.data(name=name, shape=[None, 1], dtype='int64', lod_level=1)


main_program = fluid.default_main_program()
star_program = fluid.default_startup_program()
main_program.random_seed = star_program.random_seed = 1
random.seed(1)  # paddle.reader.shuffle's order, so that every run is the same
word, predicate, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, mark = [lod_input(n) for n in FEEDS]
feature_out = db_lstm(word, predicate, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, mark)
target = lod_input('target')
crf_cost = fluid.layers.linear_chain_crf(
    input=feature_out, label=target,
    param_attr=fluid.ParamAttr(name='crfw', learning_rate=mix_hidden_lr))
avg_cost = fluid.layers.mean(crf_cost)
test_program = main_program.clone(for_test=True)
fluid.optimizer.SGD(learning_rate=fluid.layers.exponential_decay(
    learning_rate=0.1, decay_steps=100, decay_rate=0.5, staircase=True)).minimize(avg_cost)
crf_decode = fluid.layers.crf_decoding(input=feature_out, param_attr=fluid.ParamAttr(name='crfw'))
chunk = fluid.layers.chunk_eval(input=crf_decode, label=target, chunk_scheme='IOB',
                                num_chunk_types=int(np.ceil((label_dict_len - 1) / 2.0)))
num_infer, num_label, num_correct = chunk[3:]

train_data = paddle.batch(paddle.reader.shuffle(conll05.test(), buf_size=8192),
                          batch_size=BATCH_SIZE)
place = fluid.CPUPlace()
feeder = fluid.DataFeeder(
    feed_list=[word, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, predicate, mark, target],
    place=place)
exe = fluid.Executor(place)
exe.run(star_program)
fluid.global_scope().find_var(embedding_name).get_tensor().set(
    load_parameter(conll05.get_embedding(), word_dict_len, word_dim), place)

losses, f1 = [], []
evaluator = fluid.metrics.ChunkEvaluator()
for pass_id in range(PASS_NUM):
    evaluator.reset()
    for data in train_data():
        cost, ni, nl, nc = exe.run(main_program, feed=feeder.feed(data),
                                   fetch_list=[avg_cost, num_infer, num_label, num_correct])
        evaluator.update(ni, nl, nc)
        losses.append(float(np.array(cost).reshape(-1)[0]))
    f1.append(float(np.asarray(evaluator.eval()[2]).reshape(-1)[0]))
fluid.io.save_inference_model(MODEL_DIR, FEEDS, [feature_out], exe)

lod = [[3, 4, 2]]
np.random.seed(1)
feed = {n: fluid.create_random_int_lodtensor(lod, [1], place, low=0, high=high) for n, high in
        zip(FEEDS, [word_dict_len - 1, pred_dict_len - 1] + [word_dict_len - 1] * 5 +
            [mark_dict_len - 1])}
expected, = exe.run(test_program, feed=dict(feed, target=fluid.create_lod_tensor(
    np.zeros((9, 1), 'int64'), lod, place)), fetch_list=[feature_out])
with fluid.scope_guard(fluid.core.Scope()):
    inferencer, feed_names, fetch_targets = fluid.io.load_inference_model(MODEL_DIR, exe)
    assert feed_names == FEEDS
    results = exe.run(inferencer, feed={n: feed[n] for n in feed_names},
                      fetch_list=fetch_targets, return_numpy=False)
    assert results[0].recursive_sequence_lengths() == lod
    got = np.array(results[0])

print('RESULT ' + json.dumps({'losses': losses, 'f1': f1, 'expected': expected.tolist(),
                              'inferred': got.tolist()}))
