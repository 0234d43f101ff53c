# rill: `make demo` and `make test` do everything on a fresh machine.
BUILD    ?= build
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON   ?= python3
PREFIX   ?= /usr/local
CMAKE_FLAGS ?=
ifeq ($(CI),true)
CMAKE_FLAGS += -DRILL_WERROR=ON
endif

.PHONY: all deps peers build test test-c test-asan test-tsan test-python test-fuzz demo bench install clean dist-picture

all: build

deps:
	@PYTHON=$(PYTHON) scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# Every test: the C suites, again under ASan+UBSan and TSan, the Python suites, and the
# fuzz targets for a bounded time.
test: build
	@scripts/run-tests.sh

demo: build
	@scripts/demo.sh $(BUILD)

# The benchmarks' peers (PyTorch, ONNX Runtime, PaddlePaddle): optional, skipped when absent.
peers:
	@PYTHON=$(PYTHON) scripts/install-peers.sh

bench: build peers
	@scripts/bench.sh $(BUILD)

# doc/design/distributed.md's picture: a transpiled trainer and pserver drawn by `rill dot`.
dist-picture: build
	RILL_LIB=$(BUILD)/librill.so PYTHONPATH=python $(PYTHON) scripts/dist_picture.py \
	  --rill $(BUILD)/rill doc/design/distributed.svg

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
