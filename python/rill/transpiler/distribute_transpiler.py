"""DistributeTranspiler over rill_program_transpile (see the package docstring)."""

from .. import core
from ..framework import Program, default_main_program, default_startup_program


class PSDispatcher(object):
    """Base of the placement methods. rill places blocks in C; these classes name the
    method (and, called directly, give the same answer as the C code)."""
    _code = None

    def __init__(self, pserver_endpoints):
        self._eps = list(pserver_endpoints)
        self._step = 0

    @property
    def eps(self):
        return self._eps

    def reset(self):
        self._step = 0


class RoundRobin(PSDispatcher):
    """Deals the blocks to the pservers in order."""
    _code = 0

    def dispatch(self, varlist):
        out = []
        for _ in varlist:
            out.append(self._eps[self._step])
            self._step = (self._step + 1) % len(self._eps)
        return out


def _fnv1a(name):
    h = 0xcbf29ce484222325
    for b in name.encode('utf-8'):
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


class HashName(PSDispatcher):
    """pserver = FNV-1a-64(block name) % #pservers: stable across processes and runs
    (Paddle used Python's hash(), which PYTHONHASHSEED randomises)."""
    _code = 1

    def dispatch(self, varlist):
        return [self._eps[_fnv1a(v if isinstance(v, str) else v.name) % len(self._eps)]
                for v in varlist]


class DistributeTranspilerConfig(object):
    """slice_var_up (True), split_method (RoundRobin), min_block_size (8192; smaller is
    refused by transpile). Fluid's other fields are accepted and ignored where they
    concern modes rill does not have (nccl2, collective, DC-ASGD, geo-SGD)."""

    def __init__(self):
        self.slice_var_up = True
        self.split_method = None
        self.min_block_size = 8192
        self.enable_dc_asgd = False
        self.mode = 'pserver'
        self.print_log = False
        self.wait_port = True
        self.runtime_split_send_recv = False
        self.sync_mode = True
        self.completely_not_async = False
        self.half_async = False


def _method_code(m):
    if m is None:
        return RoundRobin._code
    if isinstance(m, type) and issubclass(m, PSDispatcher):
        return m._code
    if isinstance(m, PSDispatcher):
        return type(m)._code
    raise TypeError('split_method must be RoundRobin or HashName, got %r' % (m,))


def _program(data, seed):
    p = Program.parse_from_string(data)
    p.random_seed = seed
    return p


class DistributeTranspiler(object):
    """Fluid's DistributeTranspiler (pserver mode)."""

    def __init__(self, config=None):
        self.config = config if config is not None else DistributeTranspilerConfig()
        if self.config.mode != 'pserver':
            raise core.error_class('UNIMPLEMENTED')(
                'DistributeTranspiler: mode %r is not supported (only pserver)' %
                (self.config.mode,))
        self._trainer = None
        self._pservers = {}

    def transpile(self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1,
                  sync_mode=True, startup_program=None, current_endpoint="127.0.0.1:6174"):
        if program is None:
            program = default_main_program()
        if startup_program is None:
            startup_program = default_startup_program()
        if isinstance(trainers, str):
            raise core.error_class('UNIMPLEMENTED')(
                'DistributeTranspiler: trainers as endpoints (nccl2 mode) is not supported')
        cfg = self.config
        # A startup program already given a trainer's form (its distributed tables
        # declared, not initialized) is transpiled from the form it had before, which
        # the pservers' startup programs need.
        origin = getattr(startup_program, '_dist_origin', None) or startup_program._c()
        trainer, per_ep, tstartup = core.transpile(
            program._c(), origin, pservers, trainers, trainer_id, sync_mode,
            cfg.slice_var_up, _method_code(cfg.split_method), cfg.min_block_size)
        if tstartup is not None:
            # As Paddle's transpiler does, the startup program itself changes: a trainer
            # running it never allocates a distributed lookup table.
            startup_program._dist_origin = origin
            startup_program._adopt(core.CProgram.parse(tstartup))
        self.origin_program = program
        self.startup_program = startup_program
        self.trainer_id = trainer_id
        self.trainer_num = trainers
        self.sync_mode = sync_mode
        self.pserver_endpoints = pservers.split(',')
        self._trainer = trainer
        self._pservers = per_ep
        self._seed = getattr(program, 'random_seed', 0)
        self._startup_seed = getattr(startup_program, 'random_seed', 0)

    def _need(self):
        if self._trainer is None:
            raise core.error_class('FAILED_PRECONDITION')(
                'DistributeTranspiler: call transpile() first')

    def _ep(self, endpoint):
        self._need()
        if endpoint not in self._pservers:
            raise core.error_class('NOT_FOUND')(
                'DistributeTranspiler: endpoint %s is not one of the pservers %s' %
                (endpoint, ','.join(self.pserver_endpoints)))
        return self._pservers[endpoint]

    def get_trainer_program(self, wait_port=True):
        """The trainer program. It and the program transpiled (with its clones) are
        marked as this trainer's, so fluid.io saves from them are the elected trainer's
        alone (rill.distributed.is_saver) and hold the pservers' values."""
        self._need()
        p = _program(self._trainer, self._seed)
        from ..distributed import _mark_trainer
        _mark_trainer(p, self)
        return p

    def get_pserver_program(self, endpoint):
        return _program(self._ep(endpoint)[0], self._seed)

    def get_pserver_programs(self, endpoint):
        return (self.get_pserver_program(endpoint),
                self.get_startup_program(endpoint))

    def get_startup_program(self, endpoint, pserver_program=None, startup_program=None):
        return _program(self._ep(endpoint)[1], self._startup_seed)
