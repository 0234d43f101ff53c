"""image_classification's ResNet (models.py, the book's chapter 03 at depth 8) with
PaddlePaddle 1.8.5 on seeded synthetic 3x16x16 images of ten classes; writes
image_classification_resnet/. Run with the Paddle 1.8.5 interpreter."""
import numpy as np

from _gen import generate
from models import STEPS

rng = np.random.RandomState(3)
label = rng.randint(0, 10, size=(STEPS, 8, 1)).astype('int64')
centers = rng.rand(10, 3, 16, 16).astype('float32')
pixel = (centers[label[..., 0]] + 0.5 * rng.rand(STEPS, 8, 3, 16, 16)).astype('float32')
generate('image_classification_resnet', {'pixel': pixel, 'label': label})
