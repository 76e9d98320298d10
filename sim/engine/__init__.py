"""The engine: an interpreter for program semantics and a SimPy model of the pipes."""

from sim.engine.run import simulate

__all__ = ["simulate"]
