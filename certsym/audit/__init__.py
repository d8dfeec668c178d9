"""Audits: the workflows above the decisions and the readers. ``pair`` decides a claim about two networks on the
right path with its certificate; ``classes`` groups many files into classes of equal functions and certifies
each class."""
