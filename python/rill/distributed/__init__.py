"""rill.distributed: the role of this process in a parameter-server job.

Fluid 1.x scripts read Paddle's environment variables themselves; `env()` reads and
checks the same variables for scripts that want one call and clear errors:

    PADDLE_TRAINING_ROLE          TRAINER or PSERVER (TRAINING_ROLE as a fallback)
    PADDLE_PSERVERS_IP_PORT_LIST  host:port,host:port,...
    PADDLE_TRAINERS_NUM           number of trainers (>= 1)
    PADDLE_TRAINER_ID             0 .. trainers - 1 (trainers only)
    PADDLE_CURRENT_ENDPOINT       this pserver's endpoint (or POD_IP + PADDLE_PORT)

`python -m rill.distributed.launch` starts a local job with these set (see launch.py).
"""
import collections
import os

__all__ = ['DistEnv', 'EnvError', 'env', 'parse_endpoints', 'missing_kernels', 'RUNTIME_OPS']

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


def env(environ=None):
    """Reads the job's PADDLE_* variables (from os.environ unless `environ` is given) and
    returns a DistEnv; raises EnvError naming the variable that is missing or wrong."""
    e = os.environ if environ is None else environ
    role_name = 'PADDLE_TRAINING_ROLE' if 'PADDLE_TRAINING_ROLE' in e else 'TRAINING_ROLE'
    role = e.get(role_name)
    if role is None:
        raise EnvError('PADDLE_TRAINING_ROLE is not set: expected TRAINER or PSERVER')
    if role.strip().upper() not in ROLES:
        raise EnvError('%s=%r: expected TRAINER or PSERVER' % (role_name, role))
    role = role.strip().upper()
    endpoints = parse_endpoints(e.get('PADDLE_PSERVERS_IP_PORT_LIST', ''))
    trainers = _int(e, 'PADDLE_TRAINERS_NUM', 1)
    if role == 'TRAINER':
        tid = _int(e, 'PADDLE_TRAINER_ID', 0, trainers - 1)
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
    if cur[0] not in endpoints:
        raise EnvError('%s=%s is not in PADDLE_PSERVERS_IP_PORT_LIST=%s'
                       % (name, cur[0], ','.join(endpoints)))
    return DistEnv(role, None, trainers, endpoints, cur[0])


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
