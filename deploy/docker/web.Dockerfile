# syntax=docker/dockerfile:1
# The web side: gunicorn (deploy/web.sh) and the scheduler (deploy/beat.sh). It never runs a
# kernel, so it needs no GPU and no CUDA. Build from the repository root:
#   docker build -f deploy/docker/web.Dockerfile -t courseware-web .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    COURSEWARE_VAR_DIR=/var/lib/courseware \
    BIND=0.0.0.0:8000 \
    SKIP_INSTALL=1

# make runs the project's own install; npm builds the code editor's files (CodeMirror, see the
# Makefile) at build time; tini is PID 1, passing signals on and reaping orphans.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make npm tini \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/courseware
# The dependencies first: a change to the code alone reuses this layer.
COPY pyproject.toml requirements.lock package.json package-lock.json Makefile ./
# torch: requirements.lock pins torch==2.13.0. On the development machines that pin is met by a
# CPU wheel on their disk; from PyPI, on Linux x86_64, it is the CUDA build (several GB of CUDA
# libraries as pip packages), which the web side would never use. So the CPU build of the same
# release goes in first from PyTorch's CPU index: its version, 2.13.0+cpu, meets ==2.13.0, and
# `make` (pip install -r requirements.lock) then leaves it alone.
RUN python3.11 -m venv .venv \
 && .venv/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
 && make --no-print-directory .venv/.installed

COPY . .
# `make install` again: the venv is current, this adds the vendored CodeMirror files, which
# collectstatic (deploy/web.sh setup) gathers. deploy/web.sh skips it at run time (SKIP_INSTALL).
RUN make --no-print-directory install && rm -rf node_modules \
 && mkdir -p /var/lib/courseware/static

EXPOSE 8000
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["deploy/web.sh"]
