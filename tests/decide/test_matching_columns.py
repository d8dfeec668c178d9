"""The columnar matching (``Matching``): the same sequence of ``Match`` as the list it stands for, and the same
certificate columns whichever form the matches take."""

from __future__ import annotations

import pytest
from flint import fmpq
from hypothesis import given
from hypothesis import strategies as st

from certsym.certify.equivalence import matching_json
from certsym.decide.equivalence import Match, Matching, match_columns

triples = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6),
                             st.builds(fmpq, st.integers(1, 99), st.integers(1, 99))), max_size=30)


@given(triples)
def test_matching_is_the_list_of_its_matches(rows):
    listed = [Match(i, j, lam) for i, j, lam in rows]
    columns = Matching([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
    assert len(columns) == len(listed)
    assert list(columns) == listed
    assert columns == listed and listed == list(columns)
    assert [columns[s] for s in range(len(rows))] == listed
    assert columns[1:4] == listed[1:4]
    assert match_columns(columns) == match_columns(listed)
    encode = str
    assert matching_json(columns, encode) == matching_json(listed, encode)


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="different lengths"):
        Matching([0, 1], [1], [fmpq(1), fmpq(2)])


def test_a_matching_differs_from_other_matches():
    one = Matching([0], [1], [fmpq(2)])
    assert one != [Match(0, 1, fmpq(3))]
    assert one != Matching([0], [2], [fmpq(2)])
    assert one != "not a matching"
