"""word2vec's N-gram model (models.py, the book's chapter 04) with PaddlePaddle 1.8.5 on
seeded synthetic 5-grams whose fifth word follows from the first four; writes word2vec/.
Run with the Paddle 1.8.5 interpreter."""
import numpy as np

from _gen import generate
from models import STEPS, WORD2VEC_DICT, WORD2VEC_FEEDS

rng = np.random.RandomState(4)
ctx = rng.randint(0, WORD2VEC_DICT, size=(STEPS, 16, 4)).astype('int64')
nxt = (ctx[..., 0] * 3 + ctx[..., 3]) % WORD2VEC_DICT
words = np.concatenate([ctx, nxt[..., None]], axis=2)
generate('word2vec', {n: words[..., k:k + 1] for k, n in enumerate(WORD2VEC_FEEDS)})
