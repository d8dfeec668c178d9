"""The workflows: load → decide → certify, once, for the API and the command line alike. ``equivalence`` decides a
claim about two networks on the right path with its certificate; ``bounds`` answers the approximate questions (the
distance, top-1) at any depth with one result type each; ``audit`` groups many files into classes of equal
functions and certifies each class."""
