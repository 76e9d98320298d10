"""Target descriptions: the machine data under ``models/<target>/``, loaded into values.

A target is data, not code. ``load_target("a2a3")`` reads the bundled description;
``load_target("/path/to/dir")`` reads any directory with the same files (a calibrated
copy written by ``ptosim calibrate``, say).
"""

from sim.target.model import Buffer, CceCost, DmaPath, Target, load_target, models_dir, target_names

__all__ = ["Buffer", "CceCost", "DmaPath", "Target", "load_target", "models_dir", "target_names"]
