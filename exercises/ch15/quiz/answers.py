"""Answer functions and shared tables for the chapter 15 quiz.

Trusted, instructor-written code run on the server. Each function gets the drawn variables as
a dict and returns a dict: "answer" (a number in the question's unit, or choice ids), optional
"wrong" (common wrong answers the tolerance must refuse), and any other values the explanation
quotes. Device figures: datasheet peaks (dense bf16 Tensor Core, HBM bandwidth).
"""

from __future__ import annotations

GPUS = [
    {"name": "A100", "bw_tbs": 2.039, "tflops": 312, "sms": 108},
    {"name": "H100", "bw_tbs": 3.35, "tflops": 990, "sms": 132},
    {"name": "H200", "bw_tbs": 4.8, "tflops": 990, "sms": 132},
]

DTYPES = [
    {"name": "fp32", "bytes": 4},
    {"name": "bf16", "bytes": 2},
    {"name": "fp16", "bytes": 2},
]

DTYPES_WITH_FP8 = [*DTYPES, {"name": "fp8", "bytes": 1}]

# Latency in cycles per level (A100-class), the basis of the chapter's relative costs. The zh
# names carry the spaces they need next to Chinese text ("一次 shared memory 访问"), so the
# questions can write "一次{level[zh]}访问" for every level.
LEVELS = [
    {"en": "a register", "zh": "寄存器", "cycles": 1},
    {"en": "shared memory", "zh": " shared memory ", "cycles": 30},
    {"en": "the L2 cache", "zh": " L2 缓存", "cycles": 200},
]

# Profiling observations and the action each one calls for (choice ids of that question). Each
# observation rules out the other actions: where fusion is the answer the batch already fills
# memory, the bandwidth-bound kernel is already fused and has no matmul for Tensor Cores, the
# matmuls that miss the Tensor Cores are large, and so on.
OBSERVATIONS = [
    {"en": "thousands of short element-wise kernels in a row (bias add, GELU, dropout, ...), each "
           "reading and writing whole activations, while the batch already fills the GPU's memory",
     "zh": "成千上万个很短的逐元素 kernel 接连运行（加偏置、GELU、dropout……），"
           "每个都要读写整份激活值，而 batch 已经占满了显存", "action": "fuse"},
    {"en": "a single large kernel, already fused and with no matrix multiplication in it, that "
           "reads every input value from HBM dozens of times: HBM bandwidth is near its peak "
           "while the arithmetic units sit mostly idle",
     "zh": "一个已经融合好的大 kernel（其中没有矩阵乘）把每个输入值从 HBM 读取几十次："
           "HBM 带宽接近峰值，运算单元却大多空闲", "action": "traffic"},
    {"en": "large matrix multiplications, in fp32, that barely use the Tensor Cores",
     "zh": "以 fp32 运行的大矩阵乘几乎没有用上 Tensor Core", "action": "dtype"},
    {"en": "long stretches where the GPU waits for gradients from other GPUs",
     "zh": "GPU 长时间在等待其他 GPU 传来的梯度", "action": "comm"},
    {"en": "a batch that uses a tenth of the GPU's memory, so that even the largest matrix "
           "multiplications leave most SMs idle",
     "zh": "batch 只用了十分之一的显存，连最大的矩阵乘都让大部分 SM 闲着", "action": "batch"},
]  # fmt: skip

# Settings of question 33. "memory" lists the parts (choice ids) that are memory-bound there: in
# training the projections are large GEMMs; in a batch-1 decoding step every weight matrix
# multiplies one token's vector (about 1 FLOP per weight byte), so everything waits on memory.
SETTINGS = [
    {"en": "in a training step with a large batch",
     "zh": "在大 batch 的训练步中",
     "memory": ["layernorm", "softmax"]},
    {"en": "in one step of autoregressive decoding at batch 1 (inference: one new token per step)",
     "zh": "在 batch 为 1 的自回归解码的一步中（推理：每步生成一个新 token）",
     "memory": ["qkv", "ffn", "lm-head", "layernorm", "softmax"]},
]  # fmt: skip

# Question 16's choices: the GPUS entries it lists, by choice id.
GPU_CHOICES = {"a100": "A100", "h100": "H100", "h200": "H200"}

SECONDS_PER_YEAR = 365.25 * 24 * 3600


def ridge(gpu: dict) -> float:
    return gpu["tflops"] * 1e12 / (gpu["bw_tbs"] * 1e12)


# What a GPU cluster makes of the same work: an A100 (312 TFLOP/s dense bf16) at a typical 40%
# utilisation, on 64 of them. 1B parameters on 1T tokens is then about 9 days.
A100_SUSTAINED = 0.4 * 312e12
CLUSTER_GPUS = 64


def training_years(v: dict) -> dict:
    flops = 6 * v["params_b"] * 1e9 * v["tokens_t"] * 1e12
    seconds = flops / (v["rate"] * 1e12)
    years = seconds / SECONDS_PER_YEAR
    gpu_days = flops / A100_SUSTAINED / 86400
    return {
        "answer": years,
        "wrong": [years / 3, years * 2],
        "flops": flops,
        "seconds": seconds,
        "gpu_days": gpu_days,
        "cluster_days": gpu_days / CLUSTER_GPUS,
        "cluster_gpus": CLUSTER_GPUS,
    }


def bandwidth_ratio(v: dict) -> dict:
    gpu_gbs = v["gpu"]["bw_tbs"] * 1000
    ratio = gpu_gbs / v["cpu_gbs"]
    return {"answer": ratio, "wrong": [1 / ratio], "gpu_gbs": gpu_gbs}


def per_sm_tflops(v: dict) -> dict:
    per_sm = v["gpu"]["tflops"] / v["gpu"]["sms"]
    return {"answer": per_sm, "wrong": [per_sm / 4], "per_tc": per_sm / 4}


def divergence_cycles(v: dict) -> dict:
    total = v["a"] + v["b"]
    util = (v["k"] * v["a"] + (32 - v["k"]) * v["b"]) / (32 * total)
    return {
        "answer": total,
        "wrong": [max(v["a"], v["b"])],
        "util": util * 100,
        "rest": 32 - v["k"],
    }


def latency_ratio(v: dict) -> dict:
    ratio = 400 / v["level"]["cycles"]
    return {"answer": ratio, "wrong": [v["level"]["cycles"] / 400]}


def ridge_point(v: dict) -> dict:
    value = ridge(v["gpu"])
    return {"answer": value, "wrong": [value / 1000, value * 1000]}


def attainable(v: dict) -> dict:
    gpu = v["gpu"]
    memory_roof = gpu["bw_tbs"] * v["ai"]  # TB/s x FLOP/B = TFLOP/s
    value = min(gpu["tflops"], memory_roof)
    other = max(gpu["tflops"], memory_roof)
    bound = "memory" if memory_roof < gpu["tflops"] else "compute"
    return {
        "answer": value,
        "wrong": [other],
        "memory_roof": memory_roof,
        "ridge": ridge(gpu),
        "bound": bound,
    }


def memory_bound_gpus(v: dict) -> dict:
    by_name = {gpu["name"]: gpu for gpu in GPUS}
    ridges = {cid: ridge(by_name[name]) for cid, name in GPU_CHOICES.items()}
    below = [cid for cid, r in ridges.items() if v["ai"] < r]
    return {"answer": below or ["none"], **{f"{cid}_ridge": r for cid, r in ridges.items()}}


def _layernorm(v: dict) -> dict:
    n = v["b"] * v["s"] * v["d"]
    nbytes = 2 * n * v["dtype"]["bytes"]
    flops = 5 * n
    return {"n": n, "nbytes": nbytes, "mb": nbytes / 1e6, "flops": flops, "ai": flops / nbytes}


def layernorm_ai(v: dict) -> dict:
    ln = _layernorm(v)
    return {**ln, "answer": ln["ai"], "wrong": [2 * ln["ai"], 5.0]}


def layernorm_memory_us(v: dict) -> dict:
    ln = _layernorm(v)
    us = ln["nbytes"] / (v["gpu"]["bw_tbs"] * 1e12) * 1e6
    compute_us = ln["flops"] / (v["gpu"]["tflops"] * 1e12) * 1e6
    return {**ln, "answer": us, "wrong": [us / 2, us * 1000], "compute_us": compute_us}


def layernorm_time_ratio(v: dict) -> dict:
    ln = _layernorm(v)
    gpu = v["gpu"]
    memory_s = ln["nbytes"] / (gpu["bw_tbs"] * 1e12)
    compute_s = ln["flops"] / (gpu["tflops"] * 1e12)
    ratio = memory_s / compute_s
    return {
        **ln,
        "answer": ratio,
        "wrong": [ratio / 2, ridge(gpu)],
        "memory_us": memory_s * 1e6,
        "compute_us": compute_s * 1e6,
        "ridge": ridge(gpu),
    }


def vector_add_ai(v: dict) -> dict:
    b = v["dtype"]["bytes"]
    return {"answer": 1 / (3 * b), "wrong": [1 / (2 * b), 1 / b], "per_elem": 3 * b}


def vector_add_us(v: dict) -> dict:
    n = 2 ** v["log2n"]
    nbytes = 3 * n * v["dtype"]["bytes"]
    us = nbytes / (v["gpu"]["bw_tbs"] * 1e12) * 1e6
    return {"answer": us, "wrong": [us * 2 / 3], "n": n, "mb": nbytes / 1e6}


def gemm_flops(v: dict) -> dict:
    mnk = v["m"] * v["n"] * v["k"]
    return {"answer": 2 * mnk, "wrong": [mnk], "mnk": mnk}


def gemm_ai(v: dict) -> dict:
    n = v["n"]
    flops = 2 * n**3
    nbytes = 3 * n * n * 2
    return {
        "answer": flops / nbytes,
        "wrong": [n / 2, 2 * n / 3],
        "flops": flops,
        "nbytes": nbytes,
    }


def tiled_reads_gb(v: dict) -> dict:
    n, t = v["n"], v["tile"]
    naive = 2 * n**3 * 2 / 1e9  # every output reads a row and a column: 2n values, n^2 outputs
    return {"answer": naive / t, "wrong": [naive, naive / (t * t)], "naive": naive}


def fusion_unfused_mb(v: dict) -> dict:
    x = v["mb"]
    return {"answer": 5 * x, "wrong": [4 * x, 3 * x], "fused": 3 * x}


def profiling_action(v: dict) -> dict:
    return {"answer": v["obs"]["action"]}


def memory_bound_parts(v: dict) -> dict:
    return {"answer": v["setting"]["memory"]}
