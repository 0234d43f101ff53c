"""recognize_digits' MLP and conv net (models.py) with PaddlePaddle 1.8.5 on seeded
synthetic 8x8 images; writes recognize_digits_mlp/ and recognize_digits_conv/. Run with
the Paddle 1.8.5 interpreter."""
import numpy as np

from _gen import generate
from models import STEPS

rng = np.random.RandomState(8)
label = rng.randint(0, 10, size=(STEPS, 16, 1)).astype('int64')
centers = rng.rand(10, 1, 8, 8).astype('float32')
img = (centers[label[..., 0]] + 0.3 * rng.rand(STEPS, 16, 1, 8, 8)).astype('float32')
generate('recognize_digits_mlp', {'img': img, 'label': label})
generate('recognize_digits_conv', {'img': img, 'label': label})
