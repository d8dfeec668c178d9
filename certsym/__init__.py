"""certsym: exact computer algebra, with certificates, for the symmetries of shallow ReLU networks."""

__version__ = "0.1.0"
