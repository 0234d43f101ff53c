"""Packaging: setup.py bundles librill into the package (what `pip install ./python`
runs), and the bundled copy is what an installed package loads without RILL_LIB."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT


def test_build_bundles_librill_and_the_package_loads_it(tmp_path):
    lib = os.environ.get('RILL_LIB') or os.path.join(ROOT, 'build', 'librill.so')
    if not os.path.isfile(lib):
        pytest.skip('librill is not built')
    out = tmp_path / 'lib'
    env = dict(os.environ, RILL_LIB=lib)
    r = subprocess.run([sys.executable, 'setup.py', '-q', 'build_py', '--build-lib', str(out)],
                       cwd=os.path.join(ROOT, 'python'), env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    bundled = out / 'rill' / '_lib' / 'librill.so'
    assert bundled.is_file()
    env = {k: v for k, v in os.environ.items() if k not in ('RILL_LIB', 'PYTHONPATH')}
    env['PYTHONPATH'] = str(out)
    r = subprocess.run([sys.executable, '-c', 'import rill; print(rill.core.lib._name)'],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(bundled)


def test_missing_library_is_a_clear_import_error(tmp_path):
    env = dict(os.environ, RILL_LIB=str(tmp_path / 'nope.so'))
    r = subprocess.run([sys.executable, '-c', 'import rill'], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0
    assert 'RILL_LIB' in r.stderr and 'nope.so' in r.stderr


def test_cpu_isa_names_the_path_and_the_environment_caps_it():
    import rill
    assert rill.cpu_isa() in ('generic', 'avx2', 'avx512')
    env = dict(os.environ, RILL_CPU_ISA='generic', PYTHONPATH=os.path.join(ROOT, 'python'))
    r = subprocess.run([sys.executable, '-c', 'import rill; print(rill.cpu_isa())'],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == 'generic'
