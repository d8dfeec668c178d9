"""The statements of the two papers, each checked on the papers' own instances (see README.md)."""
