# Two entry points: `make demo` and `make test`. Each installs what is
# missing (Debian packages), builds, and runs.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS ?= 2
CMAKE_FLAGS ?=
# The substrate alone (no adapters): the sanitizer and compiler-matrix builds.
SUBSTRATE_ONLY = -DCOEXEC_WITH_OPENMP=OFF -DCOEXEC_WITH_TBB=OFF -DCOEXEC_WITH_POCL=OFF \
  -DCOEXEC_WITH_OVERSUBSCRIPTION=OFF
# Fails a test run that leaves coexec segments or libomp files in /dev/shm.
SHM_CHECK = bash scripts/check-shm-leaks.sh
# The builds `make test-builds` compiles, each in build-<name>, with the
# compilers and build type below: the Release builds users pick, with both
# compilers (RelWithDebInfo is the main build's type with gcc; the sanitizer
# build compiles the same code with clang). Outside `make test`, to keep it
# under 30 minutes; clang's warnings do not depend on the optimisation
# level, and the sanitizer build covers them.
TEST_BUILDS = release-gcc release-clang
build-release-gcc-compilers = CC=gcc CXX=g++
build-release-gcc-type = Release
build-release-clang-compilers = CC=clang-14 CXX=clang++-14
build-release-clang-type = Release

.PHONY: all deps build build-main demo demo-substrate test test-main test-under-load test-sanitize \
  test-builds test-fuzz test-tsan test-slurm test-bignode $(addprefix test-build-,$(TEST_BUILDS)) install \
  format clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# The main job: the oversubscription scenarios (HPCCG, GPT-2, MPI) alone and in
# every mode the runner has (native, passive, capped, static, stock-llvm,
# coexec), 3 rounds with the order of the modes rotated. `make demo LONG=1`
# runs the long selection; MODES=native,passive,coexec picks modes; CPUS=N
# sizes the problems for N CPUs. `make demo-substrate` shows two processes
# sharing the CPUs through the substrate alone.
demo: build
	python3 benchmarks/oversubscription/run.py --build $(BUILD) --repeats 3 \
	  $(if $(MODES),--modes $(MODES)) $(if $(CPUS),--cpus $(CPUS)) \
	  $(if $(LONG),--long --timeout 120,--timeout 30)

demo-substrate: build
	@bash scripts/demo.sh $(BUILD)

# Every test of the main (gcc) build, then the substrate suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer with clang, the in-process
# parts under ThreadSanitizer, and a bounded run of each fuzzer (built in the
# sanitizer build). Warnings are errors here
# (COEXEC_WERROR), not in `make build`: the main build dir is re-configured
# with the option on, which stays in its cache (so build/ is compiled once,
# not once per setting). A part that cannot be built fails the configure
# (cmake/parts.cmake); the end of the run lists what was left out on purpose,
# what was skipped and why, and each stage's time.
STAGE = $(MAKE) --no-print-directory
test:
	@bash scripts/test-stages.sh $(BUILD) $(ASAN_BUILD) -- \
	  deps '$(STAGE) deps' \
	  main '$(STAGE) test-main' \
	  asan '$(STAGE) test-sanitize' \
	  tsan '$(STAGE) test-tsan' \
	  fuzz '$(STAGE) test-fuzz FUZZ_SECONDS=$(or $(FUZZ_SECONDS),10)'

build-main: deps
	cmake -S . -B $(BUILD) $(if $(wildcard $(BUILD)/CMakeCache.txt),,-DCMAKE_BUILD_TYPE=RelWithDebInfo) \
	  -DCOEXEC_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

test-main: build-main
	$(SHM_CHECK) ctest --test-dir $(BUILD) --output-on-failure --timeout 600

# The Slurm plugin against a real Slurm started on this machine (tests/slurm,
# ctest label `slurm`; test-main runs it with the rest). It skips, saying
# why, where the daemons cannot start (not root, packages missing).
test-slurm: build-main
	$(SHM_CHECK) ctest --test-dir $(BUILD) --output-on-failure --timeout 600 -L slurm

# The main build's tests with two CPU hogs beside them (stress-ng): nothing may
# depend on having the CPUs to itself. RUNS=3 runs the suite three times in a
# row; each must pass.
test-under-load: build-main
	bash scripts/under-load.sh --hogs 2 --runs $(or $(RUNS),1) -- \
	  $(SHM_CHECK) ctest --test-dir $(BUILD) --output-on-failure --timeout 600

# One clang build with ASan+UBSan, Debug (assertions on), serves the
# substrate suite and the fuzzers. (At -O1 its tests ran 50 s faster and it
# built 4 minutes slower.) The suite runs two tests at a time: every test
# works on a segment of its own, and the suite must pass beside two CPU
# hogs anyway (make test-under-load).
SANITIZE_CONFIG = CC=clang-14 CXX=clang++-14 cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
  -DCOEXEC_SANITIZE=ON -DCOEXEC_FUZZ=ON $(if $(FUZZ_SECONDS),-DCOEXEC_FUZZ_SECONDS=$(FUZZ_SECONDS)) \
  -DCOEXEC_WERROR=ON $(SUBSTRATE_ONLY)
test-sanitize: deps
	$(SANITIZE_CONFIG)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(SHM_CHECK) ctest --test-dir $(ASAN_BUILD) --output-on-failure --timeout 600 -L substrate -j2

# The build types users pick, with both compilers, must compile without a
# warning: the substrate, the CLI and the examples (the main, sanitizer and
# fuzz builds compile the tests; the adapters take too long to build twice
# more). The examples run as a smoke test of each build.
test-builds: $(addprefix test-build-,$(TEST_BUILDS))

$(addprefix test-build-,$(TEST_BUILDS)): test-build-%: deps
	$(build-$*-compilers) cmake -S . -B build-$* -DCMAKE_BUILD_TYPE=$(build-$*-type) \
	  -DCOEXEC_WERROR=ON $(SUBSTRATE_ONLY) >/dev/null
	cmake --build build-$* -j$(JOBS) --target coexec_examples coexec_cli
	$(SHM_CHECK) ctest --test-dir build-$* --output-on-failure --timeout 120 -R '^example\.'

# libFuzzer targets (tests/fuzz) with clang, ASan and UBSan, in the sanitizer
# build: every committed input once, then a bounded run of each target
# (FUZZ_SECONDS, default 20).
test-fuzz: deps
	$(SANITIZE_CONFIG)
	cmake --build $(ASAN_BUILD) -j$(JOBS) --target coexec_fuzz_targets
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -L fuzz

# The in-process tests (ready queue; the shared scheduler on a private segment,
# its futex words among them; the whole runtime driven by many threads
# on a private segment; the C++ API's waits; the PoCL adapter's condvar waits) under
# ThreadSanitizer with clang. Processes sharing a segment are out of TSan's
# sight (it sees one process), so only what runs inside one process is checked.
TSAN_TESTS = test-ready-queue test-scheduler test-torture-inprocess test-cpp-api pocl_cond_waiters_test
test-tsan: deps
	CC=clang-14 CXX=clang++-14 cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOEXEC_TSAN=ON \
	  -DCOEXEC_WERROR=ON $(SUBSTRATE_ONLY) -DCOEXEC_BUILD_BENCHMARKS=OFF
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target $(TSAN_TESTS)
	set -e; for t in $(TSAN_TESTS); do \
	  TSAN_OPTIONS="second_deadlock_stack=1" $(TSAN_BUILD)/bin/$$t; done

# A big node in a QEMU guest: 64 vCPUs on 4 NUMA nodes with KVM, 16 where
# QEMU emulates the CPUs (CPUS=, NODES=, ACCEL=kvm|tcg, PROCS=), Debian's
# kernel and an initramfs of the test programs (scripts/bignode-guest.sh,
# tests/bignode/). Every CPU used, NUMA-strict
# tasks on their node, at most one running coexec thread per CPU, the
# multi-process and torture tests, 512 processes (128 emulated), a
# co-location. Outside `make test`: about 4 minutes on 2 cores without KVM,
# 16 vCPUs emulated (docs/testing.md).
BIGNODE_TARGETS = coexec_cli coexec-placement test-multiprocess coexec-torture \
  coexec-bench-many-procs coexec_host coexec_libomp_patched coexec_openmp_benchmarks
test-bignode: deps
	bash scripts/install-deps.sh bignode
	cmake -S . -B $(BUILD) $(if $(wildcard $(BUILD)/CMakeCache.txt),,-DCMAKE_BUILD_TYPE=RelWithDebInfo) \
	  -DCOEXEC_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS) --target $(BIGNODE_TARGETS)
	bash scripts/bignode-guest.sh --build $(BUILD) $(if $(CPUS),--cpus $(CPUS)) \
	  $(if $(NODES),--nodes $(NODES)) $(if $(ACCEL),--accel $(ACCEL)) \
	  $(if $(PROCS),--procs $(PROCS))

install: build
	cmake --install $(BUILD)

format:
	clang-format-14 -i $$(git ls-files '*.cpp' '*.hpp' | grep -v '^adapters/openmp/patches/')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(addprefix build-,$(TEST_BUILDS))
