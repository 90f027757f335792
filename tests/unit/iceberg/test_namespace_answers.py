"""The UpdateNamespacePropertiesResponse built from a logged operation's summary."""

from __future__ import annotations

from arco.iceberg.namespaces import properties_answer


def test_missing_is_always_a_list() -> None:
    assert properties_answer({"updated": ["a"], "removed": [], "missing": ["b"]})["missing"] == ["b"]
    assert properties_answer({"updated": ["a"], "removed": [], "missing": []})["missing"] == []
    # Summaries logged before it was always a list have null; an Idempotency-Key replay answers from them.
    old = {"updated": ["a"], "removed": ["c"], "missing": None}
    assert properties_answer(old) == {"updated": ["a"], "removed": ["c"], "missing": []}
    assert old["missing"] is None  # the logged summary is not changed
