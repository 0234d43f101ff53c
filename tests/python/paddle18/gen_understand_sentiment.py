"""understand_sentiment's convolution and stacked-LSTM nets (models.py, the book's
chapter 06) with PaddlePaddle 1.8.5 on seeded synthetic LoD reviews (1 to 12 words; the
label says whether most words come from the first half of the dictionary); writes
understand_sentiment_conv/ and understand_sentiment_lstm/. Run with the Paddle 1.8.5
interpreter."""
import numpy as np

from _gen import generate
from models import SENTIMENT_DICT, STEPS

rng = np.random.RandomState(6)
lengths = rng.randint(1, 13, size=(STEPS, 8)).astype('int64')
label = rng.randint(0, 2, size=(STEPS, 8, 1)).astype('int64')
ids = []
for s in range(STEPS):
    for b in range(8):
        half = SENTIMENT_DICT // 2
        lo = 0 if label[s, b, 0] else half
        common = rng.randint(lo, lo + half, size=lengths[s, b])
        other = rng.randint(0, SENTIMENT_DICT, size=lengths[s, b])
        ids.append(np.where(rng.rand(lengths[s, b]) < 0.75, common, other))
words = (np.concatenate(ids).astype('int64'), lengths)
generate('understand_sentiment_conv', {'words': words, 'label': label})
generate('understand_sentiment_lstm', {'words': words, 'label': label})
