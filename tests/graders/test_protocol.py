"""Every message from the sandbox is checked against its schema before a field is used."""

from __future__ import annotations

import pytest

from graders.sandbox import protocol

TENSOR = {
    "type": "Tensor",
    "shape": [4, 2],
    "strides": [2, 1],
    "dtype": "float32",
    "device": "cpu",
    "address": 4096,
}


def test_well_formed_messages_pass_unchanged() -> None:
    done = {"op": "done", "ns": 1200, "out": dict(TENSOR)}
    assert protocol.validate(done, ("done",)) == done
    hello = {"op": "hello", "torch": "2.13", "device_name": "cpu", "pid": 2, "inputs_address": 4096}
    assert protocol.validate(hello, ("hello",)) == hello
    assert protocol.validate({"op": "done", "ns": 5, "out": {"type": "list"}}, ("done",))
    raised = {
        "op": "raised",
        "phase": "call",
        "type": "ValueError",
        "message": "bad",
        "line": None,
        "code": None,
        "traceback": "...",
    }
    assert protocol.validate(raised, ("done",)) == raised  # failures may come any time


@pytest.mark.parametrize(
    ("message", "complaint"),
    [
        ({"op": "done", "ns": 1, "out": "a string"}, "bad `out`"),
        ({"op": "done", "ns": "12", "out": TENSOR}, "bad `ns`"),
        ({"op": "done", "ns": 1.5, "out": TENSOR}, "bad `ns`"),
        ({"op": "done", "ns": True, "out": TENSOR}, "bad `ns`"),
        ({"op": "done", "out": TENSOR}, "lacks `ns`"),
        ({"op": "done", "ns": 1, "out": TENSOR, "overhead_ns": 5}, "unknown field"),
        ({"op": "done", "ns": 1, "out": {**TENSOR, "shape": [-1, 2]}}, "bad `shape`"),
        ({"op": "done", "ns": 1, "out": {**TENSOR, "shape": [2]}}, "differ in length"),
        ({"op": "done", "ns": 1, "out": {**TENSOR, "dtype": "complex128"}}, "bad `dtype`"),
        ({"op": "done", "ns": 1, "out": {**TENSOR, "layout": "sparse_coo"}}, "unknown fields"),
        ({"op": "done", "ns": 1, "out": {**TENSOR, "address": "0x10"}}, "bad `address`"),
        ({"op": "done", "ns": 1, "out": {"type": "Tensor"}}, "bad `shape`"),
        ({"op": "done", "ns": 1, "out": {"type": ["x"]}}, "not one the harness writes"),
        ({"op": "saved"}, "where done was expected"),
        ({"op": "hello", "torch": "x", "device_name": "y", "pid": 0}, "where done"),
        ({"op": "done", "ns": 1, "out": {**TENSOR, "address": None}}, "bad `address`"),
        ({"op": "raised", "phase": "call", "type": 3, "message": "", "traceback": ""}, "`type`"),
        ({"op": "profiled", "ops": list(range(1000))}, "where done"),
    ],
)
def test_anything_else_is_malformed_and_named(message: dict, complaint: str) -> None:
    with pytest.raises(protocol.Malformed, match=complaint.replace("`", ".")):
        protocol.validate(message, ("done",))
