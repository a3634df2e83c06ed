# Thin wrapper over CMake. Every target installs missing dependencies, configures and builds first, so that on a
# fresh Debian 12 machine `make demo` and `make test` are all one needs.
# ccache may reuse objects compiled in another checkout of the project (CI builds a fresh clone elsewhere): paths
# under the checkout are hashed relative to it, and the working directory is not hashed.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)

.PHONY: all deps configure build test demo demo-plan bench sanitize fuzz torture soak clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOONMQ_FAULT_POINTS=ON

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Three moonmqd on loopback balance themselves under traffic (scripts/demo.py), print the web console's address,
# then stop (KEEP=1: keep running until Ctrl-C).
demo: build
	KEEP=$(KEEP) CAPACITY=$(CAPACITY) python3 scripts/demo.py $(BUILD)/moonmqd

# The offline planner on a skewed four-broker snapshot.
demo-plan: build
	$(BUILD)/moonmq-plan examples/snapshots/skewed-cluster.json --converge --text

bench: build
	$(BUILD)/benchmarks/goal_eval
	/usr/bin/python3 benchmarks/plan_quality/plan_quality.py $(BUILD)/moonmq-plan
	$(BUILD)/benchmarks/partition_log
	$(BUILD)/benchmarks/offset_commit
	$(BUILD)/benchmarks/groups
	$(BUILD)/benchmarks/migration
	$(BUILD)/benchmarks/migration 1024 --tls
	$(BUILD)/benchmarks/produce_forward
	$(BUILD)/benchmarks/produce_forward --tls
	$(BUILD)/benchmarks/transactions
	$(BUILD)/benchmarks/raft
	$(BUILD)/benchmarks/kafka_fetch
	$(BUILD)/benchmarks/kafka_clients 300000
	$(BUILD)/benchmarks/kafka_groups

# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer: unit, in-process integration, and the
# end-to-end tests, whose moonmqd processes are built with the sanitizers too (run before merging a change to the
# library; .ci/run leaves it out for time, see there). The Raft simulation runs
# 50 seeds here, the transaction simulation 100 and the whole-cluster simulation 50 per mode (an unoptimized,
# instrumented build runs them ~60x slower); `make test` runs 2,000 Raft and transaction seeds and 1,000 whole-cluster
# seeds per mode.
sanitize: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMOONMQ_SANITIZE=ON -DMOONMQ_FAULT_POINTS=ON \
	  -DMOONMQ_BUILD_BENCHMARKS=OFF -DMOONMQ_BUILD_EXAMPLES=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target moonmq_tests moonmq-plan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  RAFT_SIM_SEEDS=50 TXN_SIM_SEEDS=100 CLUSTER_SIM_SEEDS=50 $(ASAN_BUILD)/test/moonmq_tests

# libFuzzer targets (clang) for the parsers that meet untrusted input, FUZZ_SECONDS (default 60) each; one line per
# target, "fuzz TARGET: N execs, M crashes", and a non-zero exit on any crash (scripts/fuzz.sh).
fuzz: deps
	FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60) scripts/fuzz.sh

# The torture harness (docs/reliability.md): a seeded round without Raft, then one with it, DURATION seconds of
# faults each (default 60), then heal, converge, drain and check. SEED= replays a round.
torture: build
	$(BUILD)/test/moonmq-torture --duration $(or $(DURATION),60) $(if $(SEED),--seed $(SEED))
	$(BUILD)/test/moonmq-torture --duration $(or $(DURATION),60) --raft $(if $(SEED),--seed $(SEED))

# The whole-cluster simulation soaked: SEEDS seeds per mode (default 50000) from FIRST, in parallel slices
# (scripts/sim-soak.sh).
soak: build
	BIN=$(BUILD)/test/moonmq_tests $(if $(SEEDS),SEEDS=$(SEEDS)) $(if $(FIRST),FIRST=$(FIRST)) scripts/sim-soak.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
