"""Fluid 1.x's fluid.transpiler: DistributeTranspiler, DistributeTranspilerConfig and
the placement methods RoundRobin and HashName. The rewriting is C
(rill_program_transpile, doc/design/distributed.md); this module passes the programs
and the settings across and wraps what comes back as Programs."""

from .distribute_transpiler import (DistributeTranspiler, DistributeTranspilerConfig,
                                    RoundRobin, HashName, PSDispatcher)

__all__ = ['DistributeTranspiler', 'DistributeTranspilerConfig', 'RoundRobin', 'HashName']
