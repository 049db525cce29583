# kvsim: `make run` and `make test` are the two entry points (see README.md).
# Each installs missing Debian packages (only when missing), configures and builds in build/.

BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
SCENARIO ?= scenarios/quickstart.yaml

.PHONY: all deps configure build run test bench format clean

all: build

deps:
	@bash tools/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	./$(BUILD_DIR)/kvsim run $(SCENARIO)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

bench: build
	./$(BUILD_DIR)/kvsim bench

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD_DIR)
