"""certsym: exact computer algebra, with certificates, for the symmetries of shallow ReLU networks.

The Python API (``certsym.api``): ``load``, ``equivalent``, ``check``, ``minimal``, ``identifiable``,
``stabilizer``. They are imported on first use, so that ``import certsym`` stays light (the checker's process
imports this package too, and must not load sympy or python-flint).
"""

__version__ = "0.1.0"
__all__ = ["check", "equivalent", "identifiable", "load", "minimal", "stabilizer"]


def __getattr__(name: str):
    if name in __all__:
        from certsym import api

        return getattr(api, name)
    raise AttributeError(f"module 'certsym' has no attribute {name!r}")
