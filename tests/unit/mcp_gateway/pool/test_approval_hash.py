"""canonical_args_hash: an approval fits the same arguments whatever their key order, and only those."""

from __future__ import annotations

from shared.contracts.approval import approval_id_for, canonical_args_hash


def test_key_order_does_not_change_the_hash_at_any_depth() -> None:
    one = {"a": 1, "b": {"x": [1, {"p": "q", "r": None}], "y": True}, "c": "ü"}
    other = {"c": "ü", "b": {"y": True, "x": [1, {"r": None, "p": "q"}]}, "a": 1}
    assert list(one) != list(other)  # the same mapping, inserted in another order
    assert canonical_args_hash(one) == canonical_args_hash(other)
    assert approval_id_for("s.t", canonical_args_hash(one), "task") == approval_id_for(
        "s.t", canonical_args_hash(other), "task")


def test_an_integer_and_the_equal_float_hash_differently() -> None:
    """1 == 1.0 in Python, but a tool may treat them differently: an approval for one is not for the other."""
    assert canonical_args_hash({"qty": 1}) != canonical_args_hash({"qty": 1.0})
    assert canonical_args_hash({"n": {"qty": [1]}}) != canonical_args_hash({"n": {"qty": [1.0]}})


def test_any_other_difference_changes_the_hash() -> None:
    base = canonical_args_hash({"qty": 1, "item": "bolt"})
    assert base == canonical_args_hash({"item": "bolt", "qty": 1})
    for changed in ({"qty": 2, "item": "bolt"}, {"qty": True, "item": "bolt"}, {"qty": "1", "item": "bolt"},
                    {"qty": 1, "item": "bolt", "extra": None}, {"qty": 1}, {"qty": [1], "item": "bolt"}):
        assert canonical_args_hash(changed) != base, changed
