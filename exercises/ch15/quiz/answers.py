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


# ------------------------------------------------------------ issue 27: the added questions
# tests/courseware/quizzes/test_added_questions.py recomputes each of these independently.


def _distinct_wrong(answer: float, candidates: list[float], margin: float = 0.1) -> list[float]:
    """The common wrong answers that differ from the answer by more than `margin` (relative):
    a candidate that coincides with the right answer for this variant is not a wrong answer."""
    return [w for w in candidates if abs(w - answer) > margin * abs(answer)]


# 15.1: how big a cluster a training run needs, and how fast one GPU eats tokens.
def cluster_gpus(v: dict) -> dict:
    flops = 6 * v["params_b"] * 1e9 * v["tokens_t"] * 1e12
    per_gpu = 312e12 * v["mfu"] / 100
    gpu_seconds = flops / per_gpu
    gpus = gpu_seconds / (v["days"] * 86400)
    return {
        "answer": gpus,
        "wrong": _distinct_wrong(gpus, [gpus * v["mfu"] / 100, gpus / 3]),
        "flops": flops,
        "per_gpu_tflops": per_gpu / 1e12,
        "gpu_days": gpu_seconds / 86400,
    }


def tokens_per_second(v: dict) -> dict:
    per_token = 6 * v["params_b"] * 1e9
    sustained = v["gpu"]["tflops"] * 1e12 * v["mfu"] / 100
    rate = sustained / per_token
    return {
        "answer": rate,
        "wrong": _distinct_wrong(rate, [rate * 3, v["gpu"]["tflops"] * 1e12 / per_token]),
        "per_token": per_token,
        "sustained_tflops": sustained / 1e12,
        "day_tokens_b": rate * 86400 / 1e9,
        "day_tokens_e8": rate * 86400 / 1e8,  # 亿 = 1e8, how a zh reader counts them
        "trillion_days": 1e12 / rate / 86400,
    }


# 15.2: a GPU hides latency with threads in flight, a CPU core with caches and prediction.
def resident_threads_ratio(v: dict) -> dict:
    gpu_threads = v["gpu"]["sms"] * 2048
    cpu_threads = v["cores"] * 2
    ratio = gpu_threads / cpu_threads
    return {
        "answer": ratio,
        "wrong": _distinct_wrong(ratio, [v["gpu"]["sms"] * 64 / cpu_threads]),
        "gpu_threads": gpu_threads,
        "cpu_threads": cpu_threads,
    }


# 15.3: occupancy. Per SM (A100): 65536 registers, 2048 threads (64 warps), 32 blocks and
# 164 KB of shared memory for blocks.
SM_REGISTERS = 65536
SM_THREADS = 2048
SM_BLOCKS = 32
SM_SHARED_KB = 164


def occupancy_warps(v: dict) -> dict:
    threads, regs, smem = v["threads"], v["regs"], v["smem_kb"]
    limits = {
        "threads": SM_THREADS // threads,
        "blocks": SM_BLOCKS,
        "registers": SM_REGISTERS // (regs * threads),
        "shared": SM_SHARED_KB // smem if smem else SM_BLOCKS,
    }
    blocks = min(limits.values())
    warps = blocks * threads // 32
    binding = min(limits, key=lambda k: (limits[k], k != "registers"))
    return {
        "answer": float(warps),
        "wrong": _distinct_wrong(warps, [64.0, limits["threads"] * threads / 32]),
        "warps_per_block": threads // 32,
        "by_threads": limits["threads"],
        "by_registers": limits["registers"],
        "by_shared": limits["shared"],
        "blocks": blocks,
        "occupancy": warps / 64 * 100,
        "regs_per_block": regs * threads,
        "shared_en": f"164 KB / {smem} KB allows {limits['shared']}" if smem
        else "the block uses none, so only the 32-block cap applies",
        "shared_zh": f"164 KB / {smem} KB，允许 {limits['shared']} 个" if smem
        else "这个 block 不用，只受 32 个 block 的上限约束",
        "binding_en": {"threads": "the thread limit", "blocks": "the block limit",
                       "registers": "registers", "shared": "shared memory"}[binding],
        # The zh names carry the spaces they need beside Chinese text ("卡住它的是 shared memory").
        "binding_zh": {"threads": "线程数上限", "blocks": " block 数上限",
                       "registers": "寄存器", "shared": " shared memory"}[binding],
    }  # fmt: skip


# 15.4: coalescing. A warp's 32 loads at a stride, served in 32-byte sectors.
def warp_bytes_fetched(v: dict) -> dict:
    size, stride = v["dtype"]["bytes"], v["stride"]
    sectors = {(lane * stride * size) // 32 for lane in range(32)}
    fetched = 32 * len(sectors)
    useful = 32 * size
    return {
        "answer": float(fetched),
        "wrong": _distinct_wrong(fetched, [float(useful), float(useful * stride)]),
        "sectors": len(sectors),
        "useful": useful,
        "span": 31 * stride * size + size,
        "efficiency": useful / fetched * 100,
    }


# 15.4: shared-memory banks: 32 banks, 4 bytes wide; lane i reads 4-byte word i x stride.
def bank_conflict_ways(v: dict) -> dict:
    stride = v["stride"]
    per_bank: dict[int, set[int]] = {}
    for lane in range(32):
        word = lane * stride
        per_bank.setdefault(word % 32, set()).add(word)
    ways = max(len(words) for words in per_bank.values())
    return {
        "answer": float(ways),
        "wrong": _distinct_wrong(ways, [float(stride)], 0.01),
        "banks_used": len(per_bank),
        "passes_en": "pass" if ways == 1 else "passes",
        "per_bank": 32 // len(per_bank),
    }


# 15.4: Little's law: bytes in flight = bandwidth x latency.
def bytes_in_flight_kb(v: dict) -> dict:
    gpu = v["gpu"]
    total = gpu["bw_tbs"] * 1e12 * v["latency_ns"] * 1e-9
    per_sm = total / gpu["sms"] / 1e3
    return {
        "answer": per_sm,
        "wrong": _distinct_wrong(per_sm, [total / 1e3]),
        "total_mb": total / 1e6,
        "loads_per_sm": per_sm * 1e3 / 16,
        "loads_per_warp": per_sm * 1e3 / 16 / 64,
    }


# 15.5: the L2 roofline: a second, higher sloped ceiling (A100: about 7 TB/s from L2).
L2_TBS = 7.0


def l2_roofline(v: dict) -> dict:
    ai_hbm, reuse = v["ai_hbm"], v["reuse"]
    ai_l2 = ai_hbm / reuse
    roofs = {"compute": 312.0, "HBM": 2.039 * ai_hbm, "L2": L2_TBS * ai_l2}
    bound = min(roofs, key=roofs.__getitem__)
    value = roofs[bound]
    return {
        "answer": value,
        "wrong": _distinct_wrong(value, [min(312.0, 2.039 * ai_hbm), min(312.0, L2_TBS * ai_hbm)]),
        "ai_l2": ai_l2,
        "hbm_roof": roofs["HBM"],
        "l2_roof": roofs["L2"],
        "bound": bound,
        "bound_zh": {"compute": "算力", "HBM": " HBM 带宽", "L2": " L2 带宽"}[bound],
    }


# 15.6: tiled GEMM: a T x T tile of C loads a T x k slice of A and a k x T slice of B per step.
def tile_intensity(v: dict) -> dict:
    tile, size = v["tile"], v["dtype"]["bytes"]
    ai = tile / size
    ridge_value = ridge(v["gpu"])
    smallest = 16
    while smallest / size < ridge_value:
        smallest *= 2
    return {
        "answer": float(ai),
        "wrong": _distinct_wrong(ai, [float(tile), float(tile * tile / size)]),
        "ridge": ridge_value,
        "smallest": smallest,
        "side_en": "above" if ai >= ridge_value else "below",
        "side_zh": "高于" if ai >= ridge_value else "低于",
    }


# 15.6: double buffering: load tile i+1 while computing tile i.
def double_buffer_us(v: dict) -> dict:
    n, load, compute = v["tiles"], v["load_ns"], v["compute_ns"]
    overlapped = load + (n - 1) * max(load, compute) + compute
    serial = n * (load + compute)
    return {
        "answer": overlapped / 1000,
        "wrong": _distinct_wrong(overlapped / 1000, [serial / 1000]),
        "serial_us": serial / 1000,
        "slower_ns": max(load, compute),
        "speedup": serial / overlapped,
        "bound_en": "loading" if load >= compute else "computing",
        "bound_zh": "加载" if load >= compute else "计算",
    }


# 15.7: launch overhead: the size at which moving the data takes as long as the launch.
def launch_break_even_mb(v: dict) -> dict:
    mb = v["launch_us"] * v["gpu"]["bw_tbs"]  # 1 us x 1 TB/s = 1 MB
    small_us = v["small_kb"] * 1e3 / (v["gpu"]["bw_tbs"] * 1e12) * 1e6
    return {
        "answer": mb,
        "wrong": _distinct_wrong(mb, [mb * 1000, mb / 1000]),
        "small_us": small_us,
        "launch_share": v["launch_us"] / (v["launch_us"] + small_us) * 100,
    }


# 15.7: naive attention's S x S traffic: write scores, read them for softmax, write the
# probabilities, read them for x V.
def attention_score_traffic_gb(v: dict) -> dict:
    size = v["dtype"]["bytes"]
    elements = v["b"] * v["h"] * v["s"] ** 2
    traffic = 4 * elements * size
    qkvo = 4 * v["b"] * v["h"] * v["s"] * v["d"] * size
    return {
        "answer": traffic / 1e9,
        "wrong": _distinct_wrong(traffic / 1e9, [traffic / 4e9, traffic / 2e9]),
        "elements": elements,
        "qkvo_gb": qkvo / 1e9,
        "ratio": traffic / qkvo,
        "per_pass_gb": traffic / 4e9,
    }


# 15.8: achieved against peak. Cases are fixed so that each measured time is plausible.
ACHIEVED_CASES = [
    {"gpu": gpu, "mb": mb, "t_us": round(mb / gpu["bw_tbs"] / share)}
    for gpu in GPUS
    for mb in (134, 268, 537)
    for share in (0.42, 0.63, 0.81, 0.9)
]


def achieved_bandwidth_pct(v: dict) -> dict:
    case = v["case"]
    achieved = case["mb"] * 1e6 / (case["t_us"] * 1e-6) / 1e12  # TB/s
    pct = achieved / case["gpu"]["bw_tbs"] * 100
    return {
        "answer": pct,
        "wrong": _distinct_wrong(pct, [100 - pct, pct / 2]),
        "achieved_tbs": achieved,
        "ideal_us": case["mb"] / case["gpu"]["bw_tbs"],
    }


# 15.8: reading a profiler table: the kernel whose time would shrink most if it reached its
# roofline, i.e. the largest total time x (1 - achieved share of its bound).
PROFILES = [
    {"gemm": [410, 78], "attention": [260, 35], "layernorm": [95, 62], "gelu": [70, 55]},
    {"gemm": [520, 48], "attention": [140, 70], "layernorm": [120, 40], "gelu": [90, 52]},
    {"gemm": [380, 85], "attention": [150, 72], "layernorm": [210, 30], "gelu": [120, 58]},
    {"gemm": [300, 82], "attention": [120, 75], "layernorm": [110, 60], "gelu": [260, 25]},
    {"gemm": [450, 80], "attention": [330, 45], "layernorm": [60, 50], "gelu": [50, 60]},
]
PROFILE_NAMES = {"gemm": "matmul (GEMM)", "attention": "attention", "layernorm": "LayerNorm",
                 "gelu": "GELU + bias"}  # fmt: skip


def profile_first(v: dict) -> dict:
    rows = v["profile"]
    saving = {k: ms * (1 - pct / 100) for k, (ms, pct) in rows.items()}
    first = max(saving, key=saving.__getitem__)
    return {
        "answer": first,
        "saving_ms": saving[first],
        "largest": max(rows, key=lambda k: rows[k][0]),
        "savings": saving,
        **{f"{k}_free": 1 - pct / 100 for k, (_, pct) in rows.items()},
    }


# 15.9: the KV cache: K and V for every layer, KV head and position, per sequence.
MODELS = [
    {"name": "7B (32 layers, 32 KV heads of 128)", "zh": "7B（32 层，32 个 KV 头，每头 128 维）",
     "layers": 32, "kv_heads": 32, "head_dim": 128, "params_b": 7},
    {"name": "13B (40 layers, 40 KV heads of 128)", "zh": "13B（40 层，40 个 KV 头，每头 128 维）",
     "layers": 40, "kv_heads": 40, "head_dim": 128, "params_b": 13},
    {"name": "70B (80 layers, 8 KV heads of 128, grouped-query attention)",
     "zh": "70B（80 层，8 个 KV 头，每头 128 维，分组查询注意力 GQA）",
     "layers": 80, "kv_heads": 8, "head_dim": 128, "params_b": 70},
]  # fmt: skip


def kv_cache_gb(v: dict) -> dict:
    m = v["model"]
    per_token = 2 * m["layers"] * m["kv_heads"] * m["head_dim"] * 2  # bf16
    total = per_token * v["context"] * v["batch"]
    return {
        "answer": total / 1e9,
        "wrong": _distinct_wrong(total / 1e9, [total / 2e9, total / 1e9 / v["batch"]]),
        "per_token_kb": per_token / 1e3,
        "per_seq_gb": per_token * v["context"] / 1e9,
    }


def decode_step_ms(v: dict) -> dict:
    m, gpu = v["model"], v["gpu"]
    weights = m["params_b"] * 1e9 * 2
    cache = 2 * m["layers"] * m["kv_heads"] * m["head_dim"] * 2 * v["context"] * v["batch"]
    seconds = (weights + cache) / (gpu["bw_tbs"] * 1e12)
    return {
        "answer": seconds * 1e3,
        "wrong": _distinct_wrong(seconds * 1e3, [weights / (gpu["bw_tbs"] * 1e12) * 1e3]),
        "weights_gb": weights / 1e9,
        "cache_gb": cache / 1e9,
        "tokens_per_s": v["batch"] / seconds,
        "compute_ms": 2 * m["params_b"] * 1e9 * v["batch"] / (gpu["tflops"] * 1e12) * 1e3,
    }
