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
    done = {"op": "done", "ns": 1200, "outs": [dict(TENSOR)]}
    assert protocol.validate(done, ("done",)) == done
    hello = {"op": "hello", "torch": "2.13", "device_name": "cpu", "pid": 2, "inputs_address": 4096}
    assert protocol.validate(hello, ("hello",)) == hello
    on_cuda = {**hello, "device_name": "NVIDIA H200", "pool_address": 1 << 40}
    assert protocol.validate(on_cuda, ("hello",)) == on_cuda
    assert protocol.validate({"op": "done", "ns": 5, "outs": [{"type": "list"}]}, ("done",))
    on_gpu = {**TENSOR, "device": "cuda"}
    several = {"op": "done", "ns": 9, "outs": [on_gpu, on_gpu]}
    assert protocol.validate(several, ("done",)) == several
    # Triton kernels launched so far under the interpreter (graders/grading/interpreted.py).
    launched = {**done, "triton_launches": 3, "triton_autotuned": 1}
    assert protocol.validate(launched, ("done",)) == launched
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
        ({"op": "done", "ns": 1, "outs": "a string"}, "bad `outs`"),
        ({"op": "done", "ns": 1, "outs": []}, "bad `outs`"),
        ({"op": "done", "ns": 1, "outs": [TENSOR] * 65}, "bad `outs`"),
        ({"op": "done", "ns": 1, "out": TENSOR}, "unknown field `out`"),
        ({"op": "done", "ns": "12", "outs": [TENSOR]}, "bad `ns`"),
        ({"op": "done", "ns": 1.5, "outs": [TENSOR]}, "bad `ns`"),
        ({"op": "done", "ns": True, "outs": [TENSOR]}, "bad `ns`"),
        ({"op": "done", "outs": [TENSOR]}, "lacks `ns`"),
        ({"op": "done", "ns": 1, "outs": [TENSOR], "overhead_ns": 5}, "unknown field"),
        ({"op": "done", "ns": 1, "outs": [TENSOR], "triton_launches": -1}, "bad `triton_"),
        ({"op": "done", "ns": 1, "outs": [TENSOR], "triton_autotuned": "1"}, "bad `triton_"),
        ({"op": "done", "ns": 1, "outs": [{**TENSOR, "shape": [-1, 2]}]}, "bad `shape`"),
        ({"op": "done", "ns": 1, "outs": [{**TENSOR, "shape": [2]}]}, "differ in length"),
        ({"op": "done", "ns": 1, "outs": [{**TENSOR, "dtype": "complex128"}]}, "bad `dtype`"),
        ({"op": "done", "ns": 1, "outs": [{**TENSOR, "layout": "sparse_coo"}]}, "unknown fields"),
        ({"op": "done", "ns": 1, "outs": [{**TENSOR, "address": "0x10"}]}, "bad `address`"),
        ({"op": "done", "ns": 1, "outs": [{"type": "Tensor"}]}, "bad `shape`"),
        ({"op": "done", "ns": 1, "outs": [{"type": ["x"]}]}, "not one the harness writes"),
        ({"op": "saved"}, "where done was expected"),
        ({"op": "hello", "torch": "x", "device_name": "y", "pid": 0}, "where done"),
        ({"op": "done", "ns": 1, "outs": [{**TENSOR, "address": None}]}, "bad `address`"),
        ({"op": "raised", "phase": "call", "type": 3, "message": "", "traceback": ""}, "`type`"),
        ({"op": "profiled", "ops": list(range(1000))}, "where done"),
    ],
)
def test_anything_else_is_malformed_and_named(message: dict, complaint: str) -> None:
    with pytest.raises(protocol.Malformed, match=complaint.replace("`", ".")):
        protocol.validate(message, ("done",))


def test_a_cuda_hello_names_a_real_pool_address() -> None:
    hello = {"op": "hello", "torch": "2", "device_name": "x", "pid": 2, "inputs_address": 1}
    with pytest.raises(protocol.Malformed, match=r"bad .pool_address."):
        protocol.validate({**hello, "pool_address": 0}, ("hello",))
