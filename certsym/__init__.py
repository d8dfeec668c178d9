"""certsym: exact computer algebra, with certificates, for the symmetries of ReLU networks.

The Python API (``certsym.api``): ``load``, ``equivalent``, ``check``, ``minimal``, ``canon``, ``distance``,
``top1``, ``ball``, ``points``, ``identifiable``, ``fibre``, ``stabilizer``, ``affine``. They are imported on first use,
so that ``import certsym`` (and with it every ``certsym.*`` import) stays light.
"""

from certsym.version import __version__ as __version__

__all__ = ["affine", "ball", "canon", "check", "distance", "equivalent", "fibre", "identifiable", "load", "minimal",
           "points", "stabilizer", "top1"]


def __getattr__(name: str):
    if name in __all__:
        from certsym import api  # on first use: start-up time

        return getattr(api, name)
    raise AttributeError(f"module 'certsym' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names first-use imports provide, for tab completion."""
    return sorted(["__version__", *__all__])
