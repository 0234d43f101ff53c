"""Shared fixtures of the rill Python tests: every test builds its programs in fresh
default programs, a fresh global scope and fresh unique names."""
import os

import pytest

import rill

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, '..', 'shared', 'models')


@pytest.fixture(autouse=True)
def fresh_programs():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup), rill.unique_name.guard(), \
            rill.scope_guard(rill.Scope()):
        rill.framework._root_scope['children'].clear()
        yield
