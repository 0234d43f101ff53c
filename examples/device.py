"""--device for the examples: cpu (the default), or cuda:N (gpu:N) for GPU N, which
needs rill built with its CUDA backend and a device (rill.cuda.device_count())."""
import rill as fluid


def add_device_argument(parser):
    parser.add_argument('--device', default='cpu', metavar='PLACE',
                        help='cpu (default), or cuda:N to train on GPU N')


def place_of(device):
    """The fluid place that a --device value names; ValueError for anything else."""
    if device == 'cpu':
        return fluid.CPUPlace()
    kind, _, index = device.partition(':')
    if kind in ('cuda', 'gpu') and (index == '' or index.isdigit()):
        return fluid.CUDAPlace(int(index or 0))
    raise ValueError("--device must be cpu or cuda:N, not %r" % device)
