"""rill.distributed.launch starts pservers and trainers with Paddle's variables, prefixes
their output, returns the first failure and stops the rest; rill.distributed.env reads
and checks the variables. Every launch runs as a subprocess under a timeout."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

import rill.distributed as dist
from rill.distributed import launch
from conftest import ROOT

PYTHON = os.path.join(ROOT, 'python')
TIMEOUT = 60

# Prints the process's view of the job as one JSON line, then a line on stderr.
ENV_SCRIPT = r'''
import json, os, sys
keys = ['PADDLE_TRAINING_ROLE', 'TRAINING_ROLE', 'PADDLE_PSERVERS_IP_PORT_LIST',
        'PADDLE_TRAINERS_NUM', 'PADDLE_TRAINER_ID', 'PADDLE_CURRENT_ENDPOINT',
        'PADDLE_PORT', 'POD_IP']
print('ENV ' + json.dumps({k: os.environ.get(k) for k in keys} ,sort_keys=True))
print('ARGS ' + json.dumps(sys.argv[1:]))
sys.stderr.write('to stderr\n')
sys.stderr.write('no newline at the end')
'''


def run_launch(tmp_path, script, args, script_args=(), timeout=TIMEOUT):
    path = tmp_path / 'job.py'
    path.write_text(script)
    env = dict(os.environ)
    env['PYTHONPATH'] = PYTHON + os.pathsep + env.get('PYTHONPATH', '')
    cmd = [sys.executable, '-m', 'rill.distributed.launch'] + list(args) + [str(path)] + \
        list(script_args)
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=env, cwd=str(tmp_path), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return r, time.monotonic() - t0


def lines(data, prefix):
    return [l[len(prefix):] for l in data.decode().splitlines() if l.startswith(prefix)]


def envs_by_process(out):
    got = {}
    for l in out.decode().splitlines():
        tag, _, rest = l.partition(' ')
        if rest.startswith('ENV '):
            got[tag] = json.loads(rest[4:])
    return got


def test_every_role_and_rank_gets_its_variables(tmp_path):
    r, _ = run_launch(tmp_path, ENV_SCRIPT, ['--servers', '2', '--workers', '3'],
                      ['--steps', '4', 'x y'])
    assert r.returncode == 0, r.stderr.decode()
    got = envs_by_process(r.stdout)
    assert sorted(got) == ['[pserver.0]', '[pserver.1]', '[trainer.0]', '[trainer.1]',
                           '[trainer.2]']
    eps = got['[pserver.0]']['PADDLE_PSERVERS_IP_PORT_LIST'].split(',')
    assert len(eps) == 2
    ports = [int(e.split(':')[1]) for e in eps]
    assert len(set(ports)) == 2 and all(e.startswith('127.0.0.1:') for e in eps)
    for i in range(2):
        e = got['[pserver.%d]' % i]
        assert e['PADDLE_TRAINING_ROLE'] == e['TRAINING_ROLE'] == 'PSERVER'
        assert e['PADDLE_CURRENT_ENDPOINT'] == eps[i]
        assert e['PADDLE_PORT'] == str(ports[i]) and e['POD_IP'] == '127.0.0.1'
        assert e['PADDLE_TRAINER_ID'] is None
    for i in range(3):
        e = got['[trainer.%d]' % i]
        assert e['PADDLE_TRAINING_ROLE'] == e['TRAINING_ROLE'] == 'TRAINER'
        assert e['PADDLE_TRAINER_ID'] == str(i)
        assert e['PADDLE_CURRENT_ENDPOINT'] is None
    for e in got.values():
        assert e['PADDLE_PSERVERS_IP_PORT_LIST'] == ','.join(eps)
        assert e['PADDLE_TRAINERS_NUM'] == '3'
    assert lines(r.stdout, '[trainer.2] ARGS ') == [json.dumps(['--steps', '4', 'x y'])]
    # every stderr line, the unterminated last one too, is whole and prefixed
    for tag in got:
        assert lines(r.stderr, tag + ' ') == ['to stderr', 'no newline at the end']
    # the ports were free: they can be bound now that the job is over
    for p in ports:
        with socket.socket() as s:
            s.bind(('127.0.0.1', p))


def test_long_lines_of_many_processes_never_mix(tmp_path):
    script = ('import os, sys\n'
              'c = "abcdefgh"[int(os.environ.get("PADDLE_TRAINER_ID", "7"))]\n'
              'for i in range(200):\n'
              '    sys.stdout.write(c * 3000 + "\\n")\n')
    r, _ = run_launch(tmp_path, script, ['--servers', '1', '--workers', '4'])
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode().splitlines()
    assert len(out) == 5 * 200
    for l in out:
        tag, _, body = l.partition(' ')
        c = 'h' if tag == '[pserver.0]' else 'abcd'[int(tag[len('[trainer.'):-1])]
        assert body == c * 3000, tag


def test_free_ports_are_distinct_and_bindable():
    ports = launch.free_ports(16)
    assert len(set(ports)) == 16
    for p in ports:
        with socket.socket() as s:
            s.bind(('127.0.0.1', p))


def test_paddle_spellings_and_started_port(tmp_path):
    base = launch.free_ports(1)[0]
    r, _ = run_launch(tmp_path, ENV_SCRIPT, ['--server_num', '1', '--worker_num', '1',
                                             '--start_port', str(base)])
    assert r.returncode == 0, r.stderr.decode()
    got = envs_by_process(r.stdout)
    assert got['[pserver.0]']['PADDLE_CURRENT_ENDPOINT'] == '127.0.0.1:%d' % base
    assert got['[trainer.0]']['PADDLE_TRAINERS_NUM'] == '1'


def test_log_dir_writes_one_file_per_process(tmp_path):
    logs = tmp_path / 'logs'
    r, _ = run_launch(tmp_path, ENV_SCRIPT, ['--servers', '2', '--workers', '2',
                                             '--log_dir', str(logs)])
    assert r.returncode == 0, r.stderr.decode()
    assert sorted(os.listdir(str(logs))) == ['serverlog.0', 'serverlog.1', 'workerlog.0',
                                             'workerlog.1']
    text = (logs / 'workerlog.1').read_text()
    assert '"PADDLE_TRAINER_ID": "1"' in text and 'to stderr\n' in text
    assert not text.startswith('[')  # the files hold the process's own lines
    assert '[trainer.1] ENV ' in r.stdout.decode()  # and the console still has them


FAIL_SCRIPT = r'''
import os, sys, time
role = os.environ['PADDLE_TRAINING_ROLE']
rank = os.environ.get('PADDLE_TRAINER_ID')
if role == 'TRAINER' and rank == '1':
    time.sleep(0.5)
    print('trainer 1 fails', flush=True)
    sys.exit(7)
if role == 'TRAINER' and rank == '0':
    time.sleep(3)
    sys.exit(9)
print('%s %s waits' % (role, rank), flush=True)
time.sleep(120)
'''


def test_first_failure_code_is_returned_and_the_others_stopped(tmp_path):
    r, took = run_launch(tmp_path, FAIL_SCRIPT, ['--servers', '2', '--workers', '3'])
    assert r.returncode == 7, r.stderr.decode()
    assert took < 20
    err = r.stderr.decode()
    assert 'trainer.1 (pid' in err and 'exited with status 7' in err
    assert '[trainer.1] trainer 1 fails' in r.stdout.decode()


IGNORE_TERM_SCRIPT = r'''
import os, signal, sys, time
if os.environ['PADDLE_TRAINING_ROLE'] == 'TRAINER' and os.environ['PADDLE_TRAINER_ID'] == '0':
    time.sleep(0.5)
    sys.exit(3)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open('pid.%s.%s' % (os.environ['PADDLE_TRAINING_ROLE'], os.getpid()), 'w'):
    pass
time.sleep(120)
'''


def test_processes_ignoring_sigterm_are_killed_after_the_grace(tmp_path):
    r, took = run_launch(tmp_path, IGNORE_TERM_SCRIPT,
                         ['--servers', '1', '--workers', '2', '--kill_grace', '1'])
    assert r.returncode == 3, r.stderr.decode()
    assert took < 20
    pids = [int(f.split('.')[2]) for f in os.listdir(str(tmp_path)) if f.startswith('pid.')]
    assert pids
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


HUNG_SERVER_SCRIPT = r'''
import os, time
if os.environ['PADDLE_TRAINING_ROLE'] == 'PSERVER':
    if os.environ['PADDLE_PORT'] == os.environ['PADDLE_PSERVERS_IP_PORT_LIST'].split(',')[0].split(':')[1]:
        time.sleep(0.3)  # pserver.0 exits 0 on its own
    else:
        time.sleep(120)  # pserver.1 never does
print('done')
'''


def test_hung_pserver_is_stopped_after_the_server_grace(tmp_path):
    r, took = run_launch(tmp_path, HUNG_SERVER_SCRIPT,
                         ['--servers', '2', '--workers', '2', '--server_grace', '1',
                          '--kill_grace', '1'])
    assert r.returncode == 1
    assert took < 20
    err = r.stderr.decode()
    assert 'pserver.1 (pid' in err and 'after the last trainer finished' in err
    assert 'pserver.0 (pid' not in err


def test_pservers_exiting_after_trainers_is_success(tmp_path):
    script = ('import os, time\n'
              'if os.environ["PADDLE_TRAINING_ROLE"] == "PSERVER": time.sleep(1)\n')
    r, _ = run_launch(tmp_path, script, ['--servers', '2', '--workers', '2'])
    assert r.returncode == 0, r.stderr.decode()


def test_a_killed_process_gives_128_plus_the_signal(tmp_path):
    script = ('import os, signal, time\n'
              'if os.environ["PADDLE_TRAINING_ROLE"] == "PSERVER": '
              'os.kill(os.getpid(), signal.SIGKILL)\n'
              'time.sleep(60)\n')
    r, took = run_launch(tmp_path, script, ['--servers', '1', '--workers', '1',
                                            '--kill_grace', '1'])
    assert r.returncode == 128 + signal.SIGKILL
    assert took < 20
    assert re.search(r'\[launch\] pserver\.0 \(pid \d+\) was killed by SIGKILL',
                     r.stderr.decode()), r.stderr.decode()


def test_sigterm_to_the_launcher_stops_everyone(tmp_path):
    path = tmp_path / 'job.py'
    path.write_text('import os, time\n'
                    'open("up.%d" % os.getpid(), "w").close()\n'
                    'time.sleep(120)\n')
    env = dict(os.environ)
    env['PYTHONPATH'] = PYTHON + os.pathsep + env.get('PYTHONPATH', '')
    p = subprocess.Popen([sys.executable, '-m', 'rill.distributed.launch', '--servers', '1',
                          '--workers', '2', '--kill_grace', '2', str(path)],
                         env=env, cwd=str(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while len([f for f in os.listdir(str(tmp_path)) if f.startswith('up.')]) < 3:
            assert time.monotonic() < deadline, 'the processes did not start'
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 128 + signal.SIGTERM, err.decode()
    assert b'received signal 15' in err
    for f in os.listdir(str(tmp_path)):
        if f.startswith('up.'):
            with pytest.raises(ProcessLookupError):
                os.kill(int(f[3:]), 0)


# Trainer 1 fails (status 5) while the marker file is missing, and writes it first; every
# process prints its attempt and the endpoints it was given.
FAIL_ONCE_SCRIPT = r'''
import os, sys, time
role = os.environ['PADDLE_TRAINING_ROLE']
print('ATTEMPT %s %s' % (os.environ['RILL_RESTART_COUNT'],
                         os.environ['PADDLE_PSERVERS_IP_PORT_LIST']), flush=True)
if role == 'TRAINER' and os.environ['PADDLE_TRAINER_ID'] == '1':
    if ALWAYS or not os.path.exists('marker'):
        open('marker', 'w').close()
        time.sleep(0.3)
        sys.exit(5 + int(os.environ['RILL_RESTART_COUNT']))
time.sleep(0.5 if role == 'TRAINER' else 1.0)
'''


def _attempts(out, tag):
    return [l.split() for l in lines(out, tag + ' ATTEMPT ')]


def test_a_failed_job_is_restarted_whole_with_the_same_endpoints(tmp_path):
    r, took = run_launch(tmp_path, FAIL_ONCE_SCRIPT.replace('ALWAYS', 'False'),
                         ['--servers', '2', '--workers', '2', '--max-restarts', '1',
                          '--kill_grace', '1', '--log_dir', 'logs'])
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert took < 30
    assert re.search(r'\[launch\] trainer\.1 \(pid \d+\) exited with status 5; stopping '
                     r'the others', err), err
    assert err.count('[launch] restarting the job (restart 1 of 1)') == 1, err
    # every process ran again, told which attempt it is, with the same endpoints
    for tag in ('[pserver.0]', '[pserver.1]', '[trainer.0]', '[trainer.1]'):
        got = _attempts(r.stdout, tag)
        assert [a[0] for a in got][-1] == '1', (tag, got)
        assert len(set(a[1] for a in got)) == 1, (tag, got)
    assert [a[0] for a in _attempts(r.stdout, '[trainer.1]')] == ['0', '1']
    # the log files keep both attempts
    log = (tmp_path / 'logs' / 'workerlog.1').read_text()
    assert 'ATTEMPT 0 ' in log and 'ATTEMPT 1 ' in log


def test_without_restarts_the_failure_is_the_status(tmp_path):
    r, took = run_launch(tmp_path, FAIL_ONCE_SCRIPT.replace('ALWAYS', 'False'),
                         ['--servers', '1', '--workers', '2', '--kill_grace', '1'])
    assert r.returncode == 5, r.stderr.decode()
    assert took < 20
    assert b'restarting' not in r.stderr
    assert [a[0] for a in _attempts(r.stdout, '[trainer.1]')] == ['0']


def test_the_last_attempt_gives_the_status(tmp_path):
    r, took = run_launch(tmp_path, FAIL_ONCE_SCRIPT.replace('ALWAYS', 'True'),
                         ['--servers', '1', '--workers', '2', '--max-restarts', '2',
                          '--kill_grace', '1'])
    err = r.stderr.decode()
    assert r.returncode == 7, err  # 5 + the restart count of the third attempt
    assert took < 30
    assert 'restart 1 of 2' in err and 'restart 2 of 2' in err and 'of 2)' in err
    assert err.count('restarting the job') == 2
    for status in (5, 6, 7):
        assert 'exited with status %d;' % status in err, err


def test_a_trainer_killed_by_sigkill_is_named_with_the_signal(tmp_path):
    script = ('import os, signal, time\n'
              'if os.environ.get("PADDLE_TRAINER_ID") == "1":\n'
              '    time.sleep(0.3)\n'
              '    os.kill(os.getpid(), signal.SIGKILL)\n'
              'time.sleep(60)\n')
    r, took = run_launch(tmp_path, script, ['--servers', '1', '--workers', '2',
                                            '--kill_grace', '1', '--max-restarts', '0'])
    err = r.stderr.decode()
    assert r.returncode == 128 + signal.SIGKILL, err
    assert took < 20
    assert re.search(r'\[launch\] trainer\.1 \(pid \d+\) was killed by SIGKILL; stopping',
                     err), err


@pytest.mark.parametrize('args,message', [
    (['--servers', '0', '--workers', '1'], '--servers must be at least 1'),
    (['--servers', '1', '--workers', '-2'], '--workers must be at least 1'),
    (['--servers', 'two'], "invalid int value: 'two'"),
    (['--servers', '2', '--endpoints', '127.0.0.1:1'], 'lists 1 endpoints but --servers is 2'),
    (['--servers', '1', '--endpoints', '127.0.0.1:http'], 'is not host:port'),
    (['--servers', '2', '--started_port', '65535'], 'are not all in 1..65535'),
    (['--servers', '1', '--max-restarts', '-1'], '--max-restarts must not be negative'),
])
def test_bad_counts_and_endpoints_are_refused(tmp_path, args, message):
    r, _ = run_launch(tmp_path, 'print("never")\n', args)
    assert r.returncode == 2
    assert message in r.stderr.decode()
    assert b'never' not in r.stdout


def test_missing_script_is_refused(tmp_path):
    env = dict(os.environ)
    env['PYTHONPATH'] = PYTHON + os.pathsep + env.get('PYTHONPATH', '')
    r = subprocess.run([sys.executable, '-m', 'rill.distributed.launch', '--servers', '1',
                        '--workers', '1', str(tmp_path / 'nope.py')], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    assert r.returncode == 2
    assert "nope.py' does not exist" in r.stderr.decode()


# rill.distributed.env

TRAINER = {'PADDLE_TRAINING_ROLE': 'TRAINER', 'PADDLE_TRAINERS_NUM': '2',
           'PADDLE_TRAINER_ID': '1',
           'PADDLE_PSERVERS_IP_PORT_LIST': '127.0.0.1:6170, 127.0.0.1:6171'}
PSERVER = {'PADDLE_TRAINING_ROLE': 'PSERVER', 'PADDLE_TRAINERS_NUM': '2',
           'PADDLE_CURRENT_ENDPOINT': '127.0.0.1:6171',
           'PADDLE_PSERVERS_IP_PORT_LIST': '127.0.0.1:6170,127.0.0.1:6171'}


def test_env_reads_a_trainer_and_a_pserver():
    t = dist.env(TRAINER)
    assert t == dist.DistEnv('TRAINER', 1, 2, ['127.0.0.1:6170', '127.0.0.1:6171'], None)
    s = dist.env(PSERVER)
    assert (s.role, s.trainer_id, s.current_endpoint) == ('PSERVER', None, '127.0.0.1:6171')
    # Paddle's launcher gives a pserver TRAINING_ROLE, POD_IP and PADDLE_PORT
    old = {'TRAINING_ROLE': 'PSERVER', 'POD_IP': '127.0.0.1', 'PADDLE_PORT': '6170',
           'PADDLE_TRAINERS_NUM': '1', 'PADDLE_PSERVERS_IP_PORT_LIST': '127.0.0.1:6170'}
    assert dist.env(old).current_endpoint == '127.0.0.1:6170'


@pytest.mark.parametrize('base,change,message', [
    (TRAINER, {'PADDLE_TRAINING_ROLE': 'WORKER'}, "PADDLE_TRAINING_ROLE='WORKER'"),
    (TRAINER, {'PADDLE_TRAINING_ROLE': None}, 'PADDLE_TRAINING_ROLE is not set'),
    (TRAINER, {'PADDLE_TRAINERS_NUM': 'two'}, "PADDLE_TRAINERS_NUM='two' is not an integer"),
    (TRAINER, {'PADDLE_TRAINERS_NUM': '0'}, "PADDLE_TRAINERS_NUM='0' is out of range"),
    (TRAINER, {'PADDLE_TRAINER_ID': '2'}, "PADDLE_TRAINER_ID='2' is out of range: expected 0..1"),
    (TRAINER, {'PADDLE_TRAINER_ID': None}, 'PADDLE_TRAINER_ID is not set'),
    (TRAINER, {'PADDLE_PSERVERS_IP_PORT_LIST': ''}, 'PADDLE_PSERVERS_IP_PORT_LIST is empty'),
    (TRAINER, {'PADDLE_PSERVERS_IP_PORT_LIST': '127.0.0.1'}, "'127.0.0.1' is not host:port"),
    (TRAINER, {'PADDLE_PSERVERS_IP_PORT_LIST': 'h:70000'}, "'h:70000' is not host:port"),
    (TRAINER, {'PADDLE_PSERVERS_IP_PORT_LIST': 'h:1,h:1'}, 'endpoint h:1 appears twice'),
    (PSERVER, {'PADDLE_CURRENT_ENDPOINT': None}, 'PADDLE_CURRENT_ENDPOINT is not set'),
    (PSERVER, {'PADDLE_CURRENT_ENDPOINT': '127.0.0.1:6172'},
     'PADDLE_CURRENT_ENDPOINT=127.0.0.1:6172 is not in PADDLE_PSERVERS_IP_PORT_LIST'),
])
def test_env_names_the_malformed_variable(base, change, message):
    e = dict(base)
    for k, v in change.items():
        if v is None:
            e.pop(k)
        else:
            e[k] = v
    with pytest.raises(dist.EnvError) as info:
        dist.env(e)
    assert message in str(info.value)


THREADS_SCRIPT = r'''
import os, rill
print('THREADS %s %d' % (os.environ.get('RILL_NUM_THREADS'), rill.Executor().num_threads))
'''


def test_processes_share_the_cores(tmp_path):
    env_before = os.environ.pop('RILL_NUM_THREADS', None)
    try:
        r, _ = run_launch(tmp_path, THREADS_SCRIPT, ['--servers', '1', '--workers', '3'])
    finally:
        if env_before is not None:
            os.environ['RILL_NUM_THREADS'] = env_before
    assert r.returncode == 0, r.stderr.decode()
    want = launch.threads_per_process(4)
    assert want == max(1, len(os.sched_getaffinity(0)) // 4)
    got = [l.split('THREADS ', 1)[1] for l in r.stdout.decode().splitlines() if 'THREADS ' in l]
    assert sorted(got) == ['%d %d' % (want, want)] * 4, got


def test_executor_threads_from_the_environment(monkeypatch):
    import rill
    monkeypatch.setenv('RILL_NUM_THREADS', '3')
    assert rill.Executor().num_threads == 3
    assert rill.Executor(num_threads=2).num_threads == 2  # an explicit count wins
    monkeypatch.setenv('RILL_NUM_THREADS', '')
    assert rill.Executor().num_threads == 0  # one per core
    for bad in ('0', 'two', '-1'):
        monkeypatch.setenv('RILL_NUM_THREADS', bad)
        with pytest.raises(ValueError, match='RILL_NUM_THREADS'):
            rill.Executor()
