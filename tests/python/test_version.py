"""The version: the loaded C library's (rill.version()), the package's
(rill.__version__), pyproject.toml's and CMakeLists.txt's project() are one release;
and the options structs the package hands to C carry their size."""
import ctypes
import os
import re

import rill
from rill import core
from conftest import ROOT


def test_library_package_and_project_versions_agree():
    with open(os.path.join(ROOT, 'CMakeLists.txt')) as f:
        project = re.search(r'project\(rill VERSION ([0-9.]+)', f.read()).group(1)
    with open(os.path.join(ROOT, 'python', 'pyproject.toml')) as f:
        pyproject = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert rill.version() == project
    assert rill.__version__ == rill.version() == pyproject
    major, minor, patch = (int(x) for x in project.split('.'))
    assert rill.version_number() == (major << 16) | (minor << 8) | patch


def test_options_structs_carry_their_size():
    e = core._ExecOptions(num_threads=2)
    assert e.struct_size == ctypes.sizeof(core._ExecOptions)
    assert e.num_threads == 2
    c = core.CheckpointOptions(max_to_keep=4)
    assert c.struct_size == ctypes.sizeof(core.CheckpointOptions)
    # The executor and the checkpoint manager accept them: a wrong struct_size is an error.
    core.CExecutor(num_threads=1)
    core.CCheckpointManager('unused_ckpt_dir', max_to_keep=4)
