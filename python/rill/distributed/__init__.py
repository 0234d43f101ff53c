"""rill.distributed: the role of this process in a parameter-server job.

Fluid 1.x scripts read Paddle's environment variables themselves; `env()` reads and
checks the same variables for scripts that want one call and clear errors:

    PADDLE_TRAINING_ROLE          TRAINER or PSERVER (TRAINING_ROLE as a fallback)
    PADDLE_PSERVERS_IP_PORT_LIST  host:port,host:port,...
    PADDLE_TRAINERS_NUM           number of trainers (>= 1)
    PADDLE_TRAINER_ID             0 .. trainers - 1 (trainers only)
    PADDLE_CURRENT_ENDPOINT       this pserver's endpoint (or POD_IP + PADDLE_PORT)

With RILL_ETCD_ENDPOINTS set the job also coordinates through etcd (rill.distributed.etcd,
doc/design/distributed.md): a pserver publishes its endpoint when it calls env()
(PADDLE_PSERVER_ID, or its place in the list, is its rank), every trainer registers, and
when PADDLE_PSERVERS_IP_PORT_LIST is absent env() waits (RILL_ETCD_WAIT_MS, default
180000) until PADDLE_PSERVERS_NUM pservers have published and returns their endpoints.
`is_saver(trainer_id)` tells which trainer saves.

`python -m rill.distributed.launch` starts a local job with these set (see launch.py).

Saving in a distributed job (doc/design/distributed.md): a trainer's fluid.io saves go
through `is_saver(trainer_id)`, the one trainer elected to write, which first brings the
pservers' parameters (and, for save_persistables, the optimizer state) into its scope;
`fetch_parameters(executor, trainer_program)` is that parameter fetch.
"""
import collections
import copy
import os
import re

__all__ = ['DistEnv', 'EnvError', 'env', 'parse_endpoints', 'missing_kernels', 'RUNTIME_OPS',
           'is_saver', 'fetch_parameters', 'trainer_info', 'TrainerInfo']

ROLES = ('TRAINER', 'PSERVER')

# The ops a parameter-server job runs beyond local training.
RUNTIME_OPS = ('send', 'recv', 'send_barrier', 'fetch_barrier', 'listen_and_serv')


class EnvError(ValueError):
    """A PADDLE_* variable is missing or malformed; the message names it and its value."""


DistEnv = collections.namedtuple(
    'DistEnv', ['role', 'trainer_id', 'trainers', 'pserver_endpoints', 'current_endpoint'])
DistEnv.__doc__ = """The job as this process sees it. trainer_id is None on a pserver;
current_endpoint is None on a trainer; pserver_endpoints is a list of 'host:port'."""


def parse_endpoints(text, name='PADDLE_PSERVERS_IP_PORT_LIST'):
    """'h1:p1,h2:p2' -> ['h1:p1', 'h2:p2'], checking each host:port and refusing
    duplicates; `name` is the variable named in errors."""
    if not text or not text.strip():
        raise EnvError('%s is empty: expected host:port[,host:port...]' % name)
    out = []
    for item in text.split(','):
        ep = item.strip()
        host, sep, port = ep.rpartition(':')
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise EnvError('%s=%r: %r is not host:port with a port in 1..65535'
                           % (name, text, ep))
        ep = '%s:%d' % (host, int(port))
        if ep in out:
            raise EnvError('%s=%r: endpoint %s appears twice' % (name, text, ep))
        out.append(ep)
    return out


def _int(environ, name, low, high=None):
    raw = environ.get(name)
    if raw is None:
        raise EnvError('%s is not set' % name)
    try:
        v = int(raw.strip())
    except ValueError:
        raise EnvError('%s=%r is not an integer' % (name, raw)) from None
    if v < low or (high is not None and v > high):
        raise EnvError('%s=%r is out of range: expected %d..%s'
                       % (name, raw, low, high if high is not None else 'any'))
    return v


def _discover(e, what):
    """The pserver endpoints published in etcd: PADDLE_PSERVERS_NUM of them, waited for
    at most RILL_ETCD_WAIT_MS."""
    from . import etcd
    if 'PADDLE_PSERVERS_NUM' not in e:
        raise EnvError('PADDLE_PSERVERS_IP_PORT_LIST is not set and PADDLE_PSERVERS_NUM is '
                       'not either: with RILL_ETCD_ENDPOINTS, %s needs the number of '
                       'pservers to wait for' % what)
    count = _int(e, 'PADDLE_PSERVERS_NUM', 1)
    wait_ms = _int(e, 'RILL_ETCD_WAIT_MS', 1) if 'RILL_ETCD_WAIT_MS' in e else 180000
    return parse_endpoints(','.join(etcd.wait_pservers(count, wait_ms)),
                           'the endpoints published in etcd')


def env(environ=None):
    """Reads the job's PADDLE_* variables (from os.environ unless `environ` is given) and
    returns a DistEnv; raises EnvError naming the variable that is missing or wrong.

    With RILL_ETCD_ENDPOINTS set (etcd settings are read from the process's environment),
    a pserver publishes its endpoint and a trainer registers; without
    PADDLE_PSERVERS_IP_PORT_LIST the endpoints are the ones published in etcd, waited
    for until PADDLE_PSERVERS_NUM have come (rill.DeadlineExceededError past
    RILL_ETCD_WAIT_MS)."""
    e = os.environ if environ is None else environ
    role_name = 'PADDLE_TRAINING_ROLE' if 'PADDLE_TRAINING_ROLE' in e else 'TRAINING_ROLE'
    role = e.get(role_name)
    if role is None:
        raise EnvError('PADDLE_TRAINING_ROLE is not set: expected TRAINER or PSERVER')
    if role.strip().upper() not in ROLES:
        raise EnvError('%s=%r: expected TRAINER or PSERVER' % (role_name, role))
    role = role.strip().upper()
    use_etcd = bool(e.get('RILL_ETCD_ENDPOINTS', '').strip())
    listed = e.get('PADDLE_PSERVERS_IP_PORT_LIST', '')
    endpoints = None
    if listed.strip() or not use_etcd:
        endpoints = parse_endpoints(listed)
    trainers = _int(e, 'PADDLE_TRAINERS_NUM', 1)
    if role == 'TRAINER':
        tid = _int(e, 'PADDLE_TRAINER_ID', 0, trainers - 1)
        if use_etcd:
            from . import etcd
            etcd.register('trainer', tid)
            if endpoints is None:
                endpoints = _discover(e, 'trainer %d' % tid)
        return DistEnv(role, tid, trainers, endpoints, None)
    cur = e.get('PADDLE_CURRENT_ENDPOINT')
    name = 'PADDLE_CURRENT_ENDPOINT'
    if cur is None and 'PADDLE_PORT' in e:
        cur = '%s:%s' % (e.get('POD_IP', '127.0.0.1'), e['PADDLE_PORT'])
        name = 'POD_IP:PADDLE_PORT'
    if cur is None:
        raise EnvError('PADDLE_CURRENT_ENDPOINT is not set on a pserver')
    cur = parse_endpoints(cur, name)
    if len(cur) != 1:
        raise EnvError('%s=%r: expected one host:port' % (name, ','.join(cur)))
    if use_etcd:
        from . import etcd
        if 'PADDLE_PSERVER_ID' in e:
            rank = _int(e, 'PADDLE_PSERVER_ID', 0)
        else:
            rank = endpoints.index(cur[0]) if endpoints and cur[0] in endpoints else -1
        etcd.register('pserver', rank, cur[0])
        if endpoints is None:
            endpoints = _discover(e, 'pserver %s' % cur[0])
    if cur[0] not in endpoints:
        raise EnvError('%s=%s is not in %s=%s'
                       % (name, cur[0], 'PADDLE_PSERVERS_IP_PORT_LIST' if listed.strip()
                          else 'the endpoints published in etcd', ','.join(endpoints)))
    return DistEnv(role, None, trainers, endpoints, cur[0])


def is_saver(trainer_id):
    """Whether trainer `trainer_id` (this process) is the one that saves: trainer 0
    without etcd; with RILL_ETCD_ENDPOINTS, the winner of the election under
    /rill/<job>/saver, tried again at each call so that another trainer takes over once
    the saver died and its lease expired (rill.distributed.etcd.is_saver)."""
    from . import etcd
    return etcd.is_saver(trainer_id)


def missing_kernels():
    """The ops of RUNTIME_OPS that have no CPU kernel in the librill loaded (an empty
    list when this build can run a parameter-server job), read from their descriptions
    as `rill ops` prints them."""
    from .. import core
    missing = []
    for op in RUNTIME_OPS:
        try:
            text = core.op_describe(op)
        except core.error_class('NOT_FOUND'):  # not registered at all
            missing.append(op)
            continue
        if any(line.strip() == 'kernels: none' for line in text.splitlines()):
            missing.append(op)
    return missing


# ------------------------------------------------------------- saving in a job ----

class TrainerInfo(object):
    """What a transpiled trainer's programs carry for saving (`program._rill_dist`, set by
    DistributeTranspiler.get_trainer_program on the trainer program and on the program it
    was transpiled from): trainer_id, trainers, endpoints, the trainer `program` (its
    recv / concat ops say where each parameter lives), and the pserver programs, read
    when the optimizer state is fetched."""

    def __init__(self, trainer_id, trainers, endpoints, program, origin, pserver_programs):
        self.trainer_id = trainer_id
        self.trainers = trainers
        self.endpoints = list(endpoints)
        self.program = program
        self._origin = origin
        self._pserver_programs = dict(pserver_programs)  # endpoint -> ProgramDesc bytes
        self._state = None

    def state_layout(self):
        """{state variable: [(name on the pserver, endpoint, dims there), ...]} for the
        optimizer state and learning rates of the origin program's optimizer ops, blocks
        in row order; a list whose dims all equal the variable's are copies of it."""
        if self._state is None:
            self._state = _state_layout(self._origin, self._pserver_programs)
        return self._state


def _mark_trainer(trainer_program, transpiler):
    info = TrainerInfo(transpiler.trainer_id, transpiler.trainer_num,
                       transpiler.pserver_endpoints, trainer_program,
                       transpiler.origin_program,
                       {ep: v[0] for ep, v in transpiler._pservers.items()})
    trainer_program._rill_dist = info
    transpiler.origin_program._rill_dist = info
    return info


def trainer_info(program):
    """The TrainerInfo of a transpiled trainer's program, of the program it was
    transpiled from, or of a clone of either (followed through clone()); None for a
    program of a local run."""
    seen = 0
    while program is not None and seen < 64:
        info = getattr(program, '_rill_dist', None)
        if info is not None:
            return info
        ref = getattr(program, '_rill_clone_of', None)
        program = ref() if ref is not None else None
        seen += 1
    return None


def _copy_var(src_block, dst_block, name, persistable=None):
    from ..framework import Variable
    if name in dst_block.vars:
        return
    vd = copy.deepcopy(src_block.var(name).desc)
    if persistable is not None:
        vd['persistable'] = persistable
    dst_block._add_var(Variable(dst_block, vd))


def _fetch_program(trainer_program):
    """A program of the trainer program's `recv` ops (read at once, without barriers) and
    the `concat` ops that rebuild each cut parameter from the blocks received."""
    from .. import core
    from ..framework import Program
    src = trainer_program.global_block()
    recvs = [op for op in src.ops if op.type == 'recv']
    if not recvs:
        raise core.error_class('INVALID_ARGUMENT')(
            'fetch_parameters: the program has no recv op: it is not a trainer program '
            'of DistributeTranspiler.get_trainer_program')
    received = set()
    prog = Program()
    dst = prog.global_block()
    for op in recvs:
        outs = op.output('Out')
        for n in outs:
            _copy_var(src, dst, n)
        received.update(outs)
        dst.append_op('recv', outputs={'Out': outs},
                      attrs={'epmap': list(op.attr('epmap')),
                             'trainer_id': int(op.attr('trainer_id') or 0),
                             'varnames': list(op.attr('varnames') or []),
                             'with_barrier': False}, infer_shape=False)
    for op in src.ops:
        if op.type == 'concat' and op.input('X') and set(op.input('X')) <= received:
            for n in op.output('Out'):
                _copy_var(src, dst, n)
            dst.append_op('concat', inputs={'X': op.input('X')},
                          outputs={'Out': op.output('Out')},
                          attrs={'axis': int(op.attr('axis') or 0)}, infer_shape=False)
    return prog


def fetch_parameters(executor, trainer_program, scope=None):
    """Receives the current parameters from the pservers into `scope` (default: the
    global scope): runs the trainer program's `recv` ops, without barriers (a pserver
    answers a trainer between rounds at once), and the `concat` ops that join each cut
    parameter's blocks. Returns the names of the parameters written."""
    from ..executor import global_scope
    prog = _fetch_program(trainer_program)
    executor.run(prog, scope=scope if scope is not None else global_scope())
    blk = prog.global_block()
    return sorted(n for n, v in blk.vars.items() if v.persistable)


_BLOCK = re.compile(r'^(.*)\.block(\d+)$')


def _state_layout(origin, pserver_programs):
    from ..framework import Program, OpRole
    whole = {}  # (param, slot) -> state variable in the origin program
    for op in origin.global_block().ops:
        if not (int(op.attr('op_role') or 0) & OpRole.Optimize):
            continue
        if not {'Param', 'Grad', 'LearningRate'} <= set(op.input_names) or not op.input('Param'):
            continue
        p = op.input('Param')[0]
        for slot in op.input_names:
            if slot not in ('Param', 'Grad') and op.input(slot):
                whole[(p, slot)] = op.input(slot)[0]
    params = {p for p, _ in whole}
    parts = {}  # state -> {(param, block): (name there, endpoint, dims)}
    for ep, data in pserver_programs.items():
        ps = Program.parse_from_string(data)
        b0 = ps.global_block()
        for blk in ps.blocks[1:]:
            for op in blk.ops:
                if 'Param' not in op.input_names or not op.input('Param'):
                    continue
                pb = op.input('Param')[0]
                m = _BLOCK.match(pb)
                p, k = (pb, 0) if pb in params or not m else (m.group(1), int(m.group(2)))
                for slot in op.input_names:
                    v = whole.get((p, slot))
                    if v is None or not op.input(slot):
                        continue
                    there = op.input(slot)[0]
                    dims = tuple(b0.var(there).shape) if b0.has_var(there) else None
                    parts.setdefault(v, {})[(p, k)] = (there, ep, dims)
    return {v: [d[key] for key in sorted(d, key=lambda pk: (pk[1], pk[0]))]
            for v, d in parts.items()}


def _state_program(info):
    """recv (+ concat) ops bringing each optimizer state variable the trainer program
    declares, whole, from the pservers: a variable cut like its parameter is joined from
    its blocks in row order; one copied per block (Adam's beta powers, the learning rate)
    is read once."""
    from ..framework import Program
    src = info.program.global_block()
    prog = Program()
    dst = prog.global_block()
    tid = int(info.trainer_id)
    for v, blocks in sorted(info.state_layout().items()):
        if not src.has_var(v):
            continue
        dims = tuple(src.var(v).shape)
        _copy_var(src, dst, v, persistable=True)
        if len(blocks) == 1 or all(b[2] == dims for b in blocks):
            there, ep, _ = blocks[0]
            dst.append_op('recv', outputs={'Out': [v]},
                          attrs={'epmap': [ep], 'trainer_id': tid, 'varnames': [there],
                                 'with_barrier': False}, infer_shape=False)
            continue
        names = []
        for there, ep, bdims in blocks:
            dst.create_var(name=there, shape=list(bdims), dtype=src.var(v).dtype)
            names.append(there)
        dst.append_op('recv', outputs={'Out': names},
                      attrs={'epmap': [b[1] for b in blocks], 'trainer_id': tid,
                             'with_barrier': False}, infer_shape=False)
        dst.append_op('concat', inputs={'X': names}, outputs={'Out': [v]},
                      attrs={'axis': 0}, infer_shape=False)
    return prog


def _fetch_state(executor, info, scope=None):
    """Brings the optimizer state from the pservers into `scope` (default: global)."""
    from ..executor import global_scope
    prog = _state_program(info)
    if prog.global_block().ops:
        executor.run(prog, scope=scope if scope is not None else global_scope())
