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
"""
import collections
import os

__all__ = ['DistEnv', 'EnvError', 'env', 'is_saver', 'parse_endpoints', 'missing_kernels',
           'RUNTIME_OPS']

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


def fetch_parameters(executor, trainer_program, scope=None):
    """Receives the current parameters of a transpiled trainer program from its pservers
    into `scope` (default: the global scope): the program's `recv` ops and the `concat`
    ops that join each parameter's blocks, run alone. A pserver answers a trainer that
    is between steps at once."""
    p = trainer_program.clone()
    blk = p.global_block()
    for i in reversed(range(len(blk.ops))):
        op = blk.ops[i]
        keep = op.type == 'recv' or (op.type == 'concat' and (op.attr('op_role') or 0) & 8)
        if not keep:
            blk._remove_op(i)
    if not blk.ops:
        raise ValueError('fetch_parameters: the program has no recv op: it is not a '
                         'transpiled trainer program')
    executor.run(p, scope=scope)
