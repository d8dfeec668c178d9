"""certsym's version, in one place below every layer (the pages it writes name it)."""

__version__ = "0.1.0"
