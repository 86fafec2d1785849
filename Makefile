# servesim -- build, test, run.
#
#   make          build ./servesim
#   make run      install missing Debian packages, build, run the embedded default scenario
#   make test     install missing packages, build, run the whole test suite
#   make asan     the same suite under AddressSanitizer + UBSan
#   make valgrind the command-line tests with every servesim run under valgrind memcheck
#   make fuzz     the libFuzzer harnesses of fuzz/, FUZZ_SECONDS (30) each (clang; make deps-fuzz)
#   make bench    the Azure conversation trace, 10^6 and 10^7 streamed Poisson requests (one replica and a
#                 4-replica cluster): wall time, requests and iterations per second, ns per
#                 request-iteration, peak RSS (README Speed); 10^6 streamed sessions on 4 replicas
#   make deps     install missing Debian packages (apt-get as root; otherwise print the command)
#   make deps-html  install Debian's chromium: make test then renders the --html pages headless
#   make plots    regenerate the example pictures in plots/examples/ (needs gnuplot)
#   make kernels  build the CUDA calibration kernels with nvcc (sm_80/89/90/100/120), if nvcc exists
#   make calib-cpu  measure a tiny model on the CPU, fit a profile, query it (calib/README.md)
#   make MPI=1    build with OpenMPI (mpicc; objects in build-mpi/): `mpirun -np N ./servesim sweep|plan ...`
#                 spreads the runs over ranks (planner/README.md); `make deps MPI=1` installs openmpi
#   make test-mpi the planner's tests on an MPI build, mpirun -np 2 against one process (CI runs it)

CC      ?= cc
PKGS    := gsl libcjson lua5.4
# gnuplot-nox: servesim plot; its gnuplot has the pngcairo and svg terminals (no X needed)
DEB_PKGS := build-essential pkg-config libgsl-dev libcjson-dev liblua5.4-dev gnuplot-nox time

# MPI=1: OpenMPI's compiler wrapper and its own build directory, so the two
# builds never mix objects; ./servesim is relinked whenever the mode changes
# (build/servesim-mode names the last one).  OpenMPI is installed only for
# MPI=1 builds (make deps MPI=1): the simulator never needs it.
MPI     ?= 0
ifeq ($(MPI),1)
CC      := mpicc
BUILD   ?= build-mpi
DEB_PKGS += openmpi-bin libopenmpi-dev
CFLAGS  += -DSERVESIM_MPI
SERVESIM_MODE := mpi
else
SERVESIM_MODE := plain
endif
MODE_STAMP := build/servesim-mode
$(shell mkdir -p build; [ "$$(cat $(MODE_STAMP) 2>/dev/null)" = "$(SERVESIM_MODE)" ] || echo $(SERVESIM_MODE) > $(MODE_STAMP))

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wcast-qual -Wwrite-strings -Wformat=2 -Wno-format-nonliteral
OPT     ?= -O2 -g
CFLAGS  += -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) $(WARN) -MMD -MP $(PKG_CFLAGS) \
           -DSERVESIM_DATA_DIR=\"$(CURDIR)\"
LDLIBS  += $(PKG_LIBS) -lm

BUILD   ?= build
# sim/ is the core and sees only its own headers; the subsystems above it
# (workloads/, calib/, lua/, plots/) and the command-line front end (cli/)
# see sim/ and each other.  tests/check-layout.sh checks both rules.
SUBSYS  := workloads calib lua plots validate planner reproduce
SIM_SRC := $(wildcard sim/*.c) $(foreach d,$(SUBSYS),$(wildcard $(d)/*.c)) \
           $(filter-out cli/main.c,$(wildcard cli/*.c))
SIM_OBJ := $(SIM_SRC:%.c=$(BUILD)/%.o)
SUB_INC := -Isim $(addprefix -I,$(SUBSYS)) -Icli
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)

NVCC    := $(shell command -v nvcc 2>/dev/null)
MPICC   := $(shell command -v mpicc 2>/dev/null)

.PHONY: all run test test-mpi asan valgrind fuzz fuzz-build deps-fuzz bench deps deps-html plots clean check-deps info-optional

all: servesim info-optional

info-optional:
	@if [ -n "$(NVCC)" ]; then echo "optional: nvcc found ($(NVCC)); CUDA kernels build with 'make kernels'"; \
	 else echo "optional: nvcc not found; calibration kernels are skipped (the simulator does not need them)"; fi
	@if [ "$(MPI)" = 1 ]; then echo "optional: built with OpenMPI ($(MPICC)): mpirun -np N ./servesim sweep|plan ..."; \
	 elif [ -n "$(MPICC)" ]; then echo "optional: mpicc found; 'make MPI=1' builds distributed sweeps and plans"; \
	 else echo "optional: MPI not found; sweeps and plans use the local cores ('make deps MPI=1' installs OpenMPI)"; fi

servesim: $(BUILD)/cli/main.o $(BUILD)/libsim.a $(MODE_STAMP)
	$(CC) $(CFLAGS) -o $@ $(filter-out $(MODE_STAMP),$^) $(LDLIBS) $(LDFLAGS)

$(BUILD)/libsim.a: $(SIM_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(BUILD)/test_servesim: $(TEST_OBJ) $(BUILD)/libsim.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(LDFLAGS)

$(BUILD)/sim/%.o: sim/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isim -c $< -o $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SUB_INC) -c $< -o $@

deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "missing Debian packages:$$missing"; \
	  echo "run: sudo apt-get update && sudo apt-get install -y$$missing"; exit 1; fi

# chromium: the browser test of the --html pages (tests/test_plots.c skips
# it, saying so, without one); about a minute to install
deps-html:
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then echo "installing: chromium"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else echo "missing Debian package: chromium"; \
	  echo "run: sudo apt-get update && sudo apt-get install -y chromium"; exit 1; fi

# The README's pictures, 1200x800 PNGs: the same inputs give the same bytes.
# The runs' reports and the plots' data files stay in build/plots/.
PLOTS_OUT  := plots/examples
PLOTS_WORK := $(BUILD)/plots
SHARED_DATA ?= ../shared/data
plots: servesim
	@mkdir -p $(PLOTS_OUT) $(PLOTS_WORK)
	./servesim run workloads/chapters/ch8_four_requests_static.json --quiet --json $(PLOTS_WORK)/ch8_static.json
	./servesim run workloads/chapters/ch8_four_requests_continuous.json --quiet --json $(PLOTS_WORK)/ch8_continuous.json
	./servesim run workloads/chapters/ch8_four_requests_chunked.json --quiet --json $(PLOTS_WORK)/ch8_chunked.json
	./servesim plot timeline $(PLOTS_WORK)/ch8_static.json $(PLOTS_WORK)/ch8_continuous.json \
	  $(PLOTS_WORK)/ch8_chunked.json -o $(PLOTS_OUT)/timeline_ch8.png --data $(PLOTS_WORK)/timeline_ch8.data \
	  --title "chapter 8: four requests, static / continuous / chunked scheduling"
	./servesim run --quiet --json $(PLOTS_WORK)/default.json
	./servesim plot cdf $(PLOTS_WORK)/default.json -o $(PLOTS_OUT)/cdf_default.png --data $(PLOTS_WORK)/cdf.data \
	  --title "the default run: Qwen3-8B on one H100, Poisson 10 req/s"
	./servesim sweep workloads/chapters/ch8_goodput_vs_rate.json --rates 0.5,1,1.5,2,2.5,3,4 --seeds 5 --quiet \
	  --json $(PLOTS_WORK)/sweep.json
	./servesim plot rate $(PLOTS_WORK)/sweep.json -o $(PLOTS_OUT)/rate_ch8.png --data $(PLOTS_WORK)/rate.data \
	  --title "chapter 8: completion throughput and goodput vs arrival rate (5 seeds)"
	./servesim plan workloads/plans/chat_qwen32b_small.json --quiet --json $(PLOTS_WORK)/plan.json
	./servesim plot pareto $(PLOTS_WORK)/plan.json -o $(PLOTS_OUT)/pareto_chat_qwen32b.png \
	  --data $(PLOTS_WORK)/pareto.data --title "plan: Qwen3-32B chat at 4 req/s"
	@if [ -f $(SHARED_DATA)/e2e/splitwise_perf_model.csv ]; then \
	  echo "./servesim validate $(SHARED_DATA)/e2e/splitwise_perf_model.csv --no-rows --json $(PLOTS_WORK)/validate.json"; \
	  ./servesim validate $(SHARED_DATA)/e2e/splitwise_perf_model.csv --no-rows --json $(PLOTS_WORK)/validate.json \
	    > /dev/null && \
	  ./servesim plot scatter $(PLOTS_WORK)/validate.json -o $(PLOTS_OUT)/scatter_splitwise.png \
	    --data $(PLOTS_WORK)/scatter.data --title "validate: Splitwise measurements vs servesim"; \
	else echo "plots: $(SHARED_DATA)/e2e/splitwise_perf_model.csv not found: scatter_splitwise.png not remade"; fi

run: deps
	@$(MAKE) --no-print-directory servesim
	./servesim run

test: deps
	@$(MAKE) --no-print-directory servesim $(BUILD)/test_servesim
	@bash tests/check-layout.sh
	SERVESIM_BIN=$(CURDIR)/servesim ./$(BUILD)/test_servesim

# the planner on an MPI build: its suite, whose test_mpi_same_bytes runs
# mpirun -np 2 against one process (as root, mpirun needs its consent)
test-mpi:
	@$(MAKE) --no-print-directory MPI=1 deps
	@$(MAKE) --no-print-directory MPI=1 servesim build-mpi/test_servesim
	SERVESIM_BIN=$(CURDIR)/servesim OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	  ./build-mpi/test_servesim plan

# sim/ includes only sim/; no include cycle between modules (issue 11)
.PHONY: check-layout
check-layout:
	@bash tests/check-layout.sh

# The command-line tests (every test whose name or suite holds "cli": the
# cli suite, test_lua_cli, test_hostile_cli) with each servesim they run
# under valgrind's memcheck: build/valgrind/servesim is a wrapper that exits
# 97 on any memory error or definite leak, which fails the test that ran it.
# About 4 minutes on an idle 2-core machine.
VALGRIND_OPTS := -q --error-exitcode=97 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite
valgrind: deps
	@if ! command -v valgrind >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing: valgrind"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind; \
	  else echo "missing Debian package: valgrind"; echo "run: sudo apt-get update && sudo apt-get install -y valgrind"; exit 1; fi; fi
	@$(MAKE) --no-print-directory servesim $(BUILD)/test_servesim
	@mkdir -p $(BUILD)/valgrind
	@printf '#!/bin/sh\n# servesim under valgrind memcheck (make valgrind)\nexec valgrind $(VALGRIND_OPTS) "%s/servesim" "$$@"\n' \
	  "$(CURDIR)" > $(BUILD)/valgrind/servesim
	@chmod +x $(BUILD)/valgrind/servesim
	SERVESIM_VALGRIND=1 SERVESIM_BIN=$(CURDIR)/$(BUILD)/valgrind/servesim ./$(BUILD)/test_servesim cli

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" build-asan/test_servesim build-asan/servesim
	SERVESIM_BIN=$(CURDIR)/build-asan/servesim ./build-asan/test_servesim

build-asan/servesim: $(BUILD)/cli/main.o $(BUILD)/libsim.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(LDFLAGS)

# ---- libFuzzer harnesses (fuzz/README.md) ----
# The simulator's sources built with clang into build-fuzz/ (coverage +
# ASan + UBSan), one binary per harness; each runs FUZZ_SECONDS on a work
# corpus in build-fuzz/corpus/ seeded from the committed fuzz/corpus/.
# A crash, hang, leak or sanitizer report fails the target (the input is
# kept as build-fuzz/crashes/HARNESS-*).
FUZZ_SECONDS ?= 30
FUZZ_CC      ?= clang
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_NAMES   := scenario trace replay calib compare lua plot page
FUZZ_BINS    := $(FUZZ_NAMES:%=build-fuzz/fuzz_%)

deps-fuzz:
	@if command -v $(FUZZ_CC) >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then echo "installing: clang"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang; \
	else echo "missing Debian package: clang"; \
	  echo "run: sudo apt-get update && sudo apt-get install -y clang"; exit 1; fi

fuzz-build: deps deps-fuzz
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(FUZZ_CC) \
	  OPT="-O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN) -Wno-missing-field-initializers -Wno-string-concatenation" \
	  build-fuzz/libsim.a
	@$(MAKE) --no-print-directory $(FUZZ_BINS)

build-fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_common.h build-fuzz/libsim.a
	$(FUZZ_CC) $(CFLAGS) -O1 -g -fsanitize=fuzzer $(FUZZ_SAN) $(SUB_INC) -o $@ $< build-fuzz/libsim.a $(LDLIBS)

fuzz: fuzz-build
	@fail=""; for h in $(FUZZ_NAMES); do \
	  mkdir -p build-fuzz/corpus/$$h build-fuzz/crashes; \
	  echo "fuzz_$$h: $(FUZZ_SECONDS) s"; \
	  ./build-fuzz/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=build-fuzz/crashes/$$h- \
	    build-fuzz/corpus/$$h fuzz/corpus/$$h > build-fuzz/fuzz_$$h.log 2>&1 \
	    || { fail="$$fail $$h"; tail -n 60 build-fuzz/fuzz_$$h.log; }; \
	  grep -E "^#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|stat::average_exec_per_sec" build-fuzz/fuzz_$$h.log | tail -n 3; \
	done; \
	if [ -n "$$fail" ]; then echo "fuzz: FAILED:$$fail (inputs in build-fuzz/crashes/)"; exit 1; fi; \
	echo "fuzz: $(words $(FUZZ_NAMES)) harnesses, $(FUZZ_SECONDS) s each, no crash"


# the streamed Poisson runs' sizes; CI runs only the first (the 10^7 run
# alone is about 30 s of CPU with the decode fast path)
BENCH_SIZES ?= 1000000 10000000
BENCH_SESSIONS ?= 1000000
# The previous release: the commit that landed at the last stop (update it
# when a stop lands). make bench builds it in build/prev (git archive, its
# own make) and times the Azure conversation bench with it beside this one;
# a clone without that commit says so and goes on.
BENCH_PREV ?= 450b5f7
bench: deps
	@$(MAKE) --no-print-directory servesim
	@if git cat-file -e "$(BENCH_PREV)^{commit}" 2>/dev/null; then \
	  if [ "$$(cat build/prev/REV 2>/dev/null)" != "$$(git rev-parse $(BENCH_PREV))" ]; then \
	    rm -rf build/prev && mkdir -p build/prev && git archive "$(BENCH_PREV)" | tar -x -C build/prev && \
	    $(MAKE) --no-print-directory -C build/prev servesim >build/prev.log 2>&1 && \
	    git rev-parse $(BENCH_PREV) > build/prev/REV || { tail -n 20 build/prev.log; exit 1; }; fi; \
	  echo "the previous release ($(BENCH_PREV)), the same scenario:"; \
	  build/prev/servesim bench --scenario workloads/bench_azure_conv.json | sed 's/^/  prev: /'; \
	  else echo "bench: the previous release $(BENCH_PREV) is not in this clone: no side-by-side"; fi
	./servesim bench --scenario workloads/bench_azure_conv.json
	./servesim bench --scenario workloads/bench_azure_conv.json --exact-stats
	@for n in $(BENCH_SIZES); do echo "./servesim bench --requests $$n"; ./servesim bench --requests $$n || exit 1; done
	@for n in $(BENCH_SIZES); do \
	  ./servesim run --print-default | sed "s/\"count\": 2000,/\"count\": $$n,/" > build/bench_default_$$n.json; \
	  /usr/bin/time -f "servesim run of the default scenario, $$n requests, no flag: %e s wall, %U s user, %M KB peak RSS" \
	    ./servesim run build/bench_default_$$n.json --quiet || exit 1; done
	@# the cluster case (issue 36): the default scenario on 4 replicas behind least_requests at 4x the
	@# rate (each replica the single one's load); streamed through the router, memory flat
	@for n in $(BENCH_SIZES); do \
	  ./servesim run --print-default | sed "s/\"rate_per_s\": 10, \"count\": 2000,/\"rate_per_s\": 40, \"count\": $$n,/; \
	    s/\"seed\": 1/\"cluster\": {\"replicas\": 4, \"router\": \"least_requests\"}, \"seed\": 1/" \
	    > build/bench_cluster4_$$n.json; \
	  /usr/bin/time -f "servesim run, default scenario on 4 replicas, $$n requests: %e s wall, %U s user, %M KB peak RSS" \
	    ./servesim run build/bench_cluster4_$$n.json --quiet || exit 1; done
	@# BENCH_SESSIONS multi-turn sessions (issue 36; 10^6 by default, 2-3 min of CPU): follow-up
	@# turns streamed as their predecessors leave
	@sed "s/\"sessions\": 1000000,/\"sessions\": $(BENCH_SESSIONS),/" workloads/bench_sessions_cluster4.json \
	  > build/bench_sessions_$(BENCH_SESSIONS).json
	@/usr/bin/time -f "$(BENCH_SESSIONS) sessions, 4 replicas, prefix_affinity: %e s wall, %U s user, %M KB peak RSS" \
	  ./servesim run build/bench_sessions_$(BENCH_SESSIONS).json --quiet || exit 1
	@bash -c 'TIMEFORMAT="azure conv trace, whole process, full summary: %R s wall, %U s user"; \
	  time ./servesim run workloads/bench_azure_conv.json --quiet; \
	  TIMEFORMAT="azure conv trace, whole process, --json summary + requests: %R s wall, %U s user"; \
	  time ./servesim run workloads/bench_azure_conv.json --quiet --json build/bench_azure.json'
	@if [ -n "$(VIDUR_DIR)" ]; then sh workloads/bench_vidur.sh "$(VIDUR_DIR)"; \
	  else echo "bench: VIDUR_DIR not set: no side-by-side with Vidur (see README Speed)"; fi
	./servesim lua lua/experiments/bench_overhead.lua
	./servesim calib quality

clean:
	rm -rf build build-asan build-mpi build-fuzz servesim

# ---- CUDA calibration kernels (optional; the simulator never needs them) ----
KERNEL_ARCHS := 80 89 90 100 120
NVCC_GENCODE := $(foreach a,$(KERNEL_ARCHS),-gencode arch=compute_$(a),code=sm_$(a))
NVCC_FLAGS   ?= -O3 -std=c++17 -DCALIB_KERN_NO_CBLAS -Xcompiler -Wall,-Wextra
CUDA_LIBDIR  := $(if $(NVCC),$(abspath $(dir $(realpath $(NVCC)))../lib64))
KERNEL_BIN   := $(addprefix kernels/build/,gemm attn_prefill attn_decode membw)
KERNEL_LIB   := kernels/build/libservesim_kernels.so
KERNEL_DEPS  := kernels/common.cuh calib/calib_abi.h calib/calib_kern.h calib/calib_kern.c
KERNEL_LINK  := -lcublasLt -lcublas -Xlinker -rpath,$(CUDA_LIBDIR)

.PHONY: kernels calib-cpu
kernels:
ifeq ($(NVCC),)
	@echo "kernels: nvcc not found; CUDA calibration kernels not built (the CPU backend and the simulator do not need them)"
else
	@$(MAKE) --no-print-directory $(KERNEL_BIN) $(KERNEL_LIB)
	@echo "kernels: built $(KERNEL_BIN) $(KERNEL_LIB) for sm_$(subst $(eval) ,/,$(KERNEL_ARCHS))"
endif

kernels/build/%: kernels/%.cu $(KERNEL_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_GENCODE) -DKERNELS_MAIN -o $@ $< calib/calib_kern.c $(KERNEL_LINK)

$(KERNEL_LIB): kernels/backend.cu kernels/gemm.cu kernels/attn_prefill.cu kernels/attn_decode.cu kernels/membw.cu \
               $(KERNEL_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_GENCODE) -shared -Xcompiler -fPIC -o $@ kernels/backend.cu calib/calib_kern.c $(KERNEL_LINK)

# measure -> fit -> query on the CPU backend (a 2-layer model, about a second)
calib-cpu: servesim
	./servesim calib run --model calib/tiny-llama.json --out $(BUILD)/calib-cpu --reps 3 --quiet
	./servesim calib fit $(BUILD)/calib-cpu/measurements.csv --name cpu --out $(BUILD)/calib-cpu/cpu.json
	./servesim cost --hardware h100-sxm --profile $(BUILD)/calib-cpu/cpu.json --model calib/tiny-llama.json \
	  --batch 1:100,1:200,64:0

-include $(SIM_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/cli/main.d
