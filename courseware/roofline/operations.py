"""Operations from the chapter, with their FLOPs and HBM bytes counted the way the chapter and
the chapter 15 quiz count them (exercises/ch15/quiz/answers.py): bf16 unless named, every
tensor read or written once per kernel, HBM traffic only.

Where the quiz counts an operation, the count is the quiz's: vector add is 1 FLOP per element
against 3 accesses, LayerNorm 5 FLOPs per element against one read and one write, a square
GEMM 2n³ FLOPs against three n × n matrices, the unfused GELU + residual 5 tensor passes and
the fused one 3 (the fact check's correction of the chapter's 16 MB). Where it does not, the
count is the exercise's (exercises/ch15/*/exercise.toml): softmax 5 FLOPs per element, GELU
one FLOP per step of its formula, attention 4·S²·D FLOPs per head.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

BF16 = 2  # bytes per element
FP32 = 4


@dataclass(frozen=True)
class Operation:
    key: str
    label: str | Promise
    dtype: str
    flops: float
    bytes: float
    basis: str | Promise  # how the FLOPs and bytes were counted

    @property
    def ai(self) -> float:
        return self.flops / self.bytes


def _gemm(n: int) -> Operation:
    return Operation(
        key=f"gemm-{n}",
        label=format_lazy(_("GEMM {n} × {n} × {n}"), n=n),
        dtype="bf16",
        flops=2 * n**3,
        bytes=3 * n * n * BF16,
        basis=_("2·n³ FLOPs; A, B and C cross HBM once each: AI = n / 3"),
    )


VECTOR_N = 2**24
SOFTMAX_ROWS, SOFTMAX_COLS = 4096, 4096
LAYERNORM_ELEMENTS = 8 * 512 * 4096  # the chapter's [8, 512, 4096]
FUSION_ELEMENTS = 4_000_000 // BF16  # the chapter's 4 MB tensors
HEADS, SEQ, DIM = 16, 2048, 64

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        key="vector-add-bf16",
        label=_("Vector add c = a + b (2²⁴ elements)"),
        dtype="bf16",
        flops=VECTOR_N,
        bytes=3 * VECTOR_N * BF16,
        basis=_("1 FLOP per element; read a and b, write c"),
    ),
    Operation(
        key="vector-add-fp32",
        label=_("Vector add c = a + b (2²⁴ elements)"),
        dtype="fp32",
        flops=VECTOR_N,
        bytes=3 * VECTOR_N * FP32,
        basis=_("1 FLOP per element; read a and b, write c"),
    ),
    Operation(
        key="gelu",
        label=_("GELU (2²⁴ elements)"),
        dtype="bf16",
        flops=5 * VECTOR_N,
        bytes=2 * VECTOR_N * BF16,
        basis=_("5 FLOPs per element, one per step of the formula; read x, write the result"),
    ),
    Operation(
        key="gelu-residual-unfused",
        label=_("GELU + residual add, two kernels (4 MB tensors)"),
        dtype="bf16",
        flops=6 * FUSION_ELEMENTS,
        bytes=5 * FUSION_ELEMENTS * BF16,
        basis=_("6 FLOPs per element; read x, write h, read h, read residual, write y: 20 MB"),
    ),
    Operation(
        key="gelu-residual-fused",
        label=_("GELU + residual add, fused (4 MB tensors)"),
        dtype="bf16",
        flops=6 * FUSION_ELEMENTS,
        bytes=3 * FUSION_ELEMENTS * BF16,
        basis=_("6 FLOPs per element; read x and residual, write y: 12 MB, 40% less traffic"),
    ),
    Operation(
        key="softmax",
        label=_("Softmax over rows (4096 × 4096)"),
        dtype="bf16",
        flops=5 * SOFTMAX_ROWS * SOFTMAX_COLS,
        bytes=2 * SOFTMAX_ROWS * SOFTMAX_COLS * BF16,
        basis=_("5 FLOPs per element (max, subtract, exp, sum, divide); one read, one write"),
    ),
    Operation(
        key="layernorm",
        label=_("LayerNorm [8, 512, 4096]"),
        dtype="bf16",
        flops=5 * LAYERNORM_ELEMENTS,
        bytes=2 * LAYERNORM_ELEMENTS * BF16,
        basis=_("5 FLOPs per element; one read, one write: 8.4e7 FLOPs over 67 MB"),
    ),
    _gemm(256),
    _gemm(512),
    _gemm(1024),
    _gemm(8192),
    Operation(
        key="attention-naive",
        label=_("Attention, naive: S × S scores in HBM (16 heads, S = 2048, d = 64)"),
        dtype="bf16",
        flops=4 * HEADS * SEQ * SEQ * DIM,
        bytes=HEADS * (4 * SEQ * DIM + 4 * SEQ * SEQ) * BF16,
        basis=_(
            "4·S²·d FLOPs per head (QKᵀ and PV); Q, K, V, O once, and the S × S matrix "
            "written, read by softmax, written again and read by PV"
        ),
    ),
    Operation(
        key="attention-fused",
        label=_("Attention, fused (FlashAttention-style; 16 heads, S = 2048, d = 64)"),
        dtype="bf16",
        flops=4 * HEADS * SEQ * SEQ * DIM,
        bytes=HEADS * 4 * SEQ * DIM * BF16,
        basis=_("4·S²·d FLOPs per head; Q, K and V read once, O written once (the ideal)"),
    ),
)

OPERATIONS_BY_KEY = {op.key: op for op in OPERATIONS}
