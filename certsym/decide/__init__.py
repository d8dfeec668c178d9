"""Decisions, one theorem per module (the layered layout's ``decide`` layer; the other decision modules move here
next): ``stabilizer`` (Theorem 2)."""
