"""fit_a_line (models.py) with PaddlePaddle 1.8.5 on seeded synthetic batches; writes
fit_a_line/. Run with the Paddle 1.8.5 interpreter."""
import numpy as np

from _gen import generate
from models import STEPS

rng = np.random.RandomState(18)
x = rng.normal(size=(STEPS, 20, 13)).astype('float32')
w = rng.normal(size=(13, 1)).astype('float32')
y = (x @ w + 0.1 * rng.normal(size=(STEPS, 20, 1))).astype('float32')
generate('fit_a_line', {'x': x, 'y': y})
