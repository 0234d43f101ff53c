"""Shared by the tests that replay a generator's recorded Paddle 1.8.5 outputs (gen_detection.py,
gen_detection_rpn.py, gen_detection_nms.py): each recorded output is (shape, dtype, LoD,
values) and rill's must match it."""
import numpy as np


def check_outputs(case, outs, lods, want, rtol, atol, any_empty_shape=False):
    """Asserts that rill's outputs `outs` (numpy arrays) with their LoDs `lods` are Paddle's
    records `want`: the same count, and each the same shape, dtype and LoD, integers equal and
    floats within rtol/atol. With any_empty_shape, a record with no rows (Paddle's numpy view
    of an empty tensor) only asks for an empty output, whatever its shape."""
    assert len(outs) == len(want)
    for i, (got, lod, (shape, dtype, want_lod, values)) in enumerate(zip(outs, lods, want)):
        msg = '%s: output %d' % (case, i)
        assert str(got.dtype) == dtype, msg
        assert lod == want_lod, msg
        if any_empty_shape and shape and shape[0] == 0:
            assert got.size == 0, msg
            continue
        assert list(got.shape) == shape, msg
        if got.dtype.kind in 'iu':
            np.testing.assert_array_equal(got, np.array(values), err_msg=msg)
        else:
            np.testing.assert_allclose(got, np.array(values), rtol=rtol, atol=atol, err_msg=msg)
