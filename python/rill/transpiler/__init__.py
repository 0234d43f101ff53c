"""Fluid 1.x's fluid.transpiler: DistributeTranspiler, DistributeTranspilerConfig and
the placement methods RoundRobin and HashName. The rewriting is C
(rill_program_transpile, doc/design/distributed.md); this module passes the programs
and the settings across and wraps what comes back as Programs. memory_optimize and
release_memory only warn, as in Paddle 1.8.5 (memory_optimization_transpiler.py)."""

from .distribute_transpiler import (DistributeTranspiler, DistributeTranspilerConfig,
                                    RoundRobin, HashName, PSDispatcher)

from .memory_optimization_transpiler import memory_optimize, release_memory

__all__ = ['DistributeTranspiler', 'DistributeTranspilerConfig', 'RoundRobin', 'HashName',
           'memory_optimize', 'release_memory']
