# muonbench: see README.md. Plain GNU make; the libraries come from pkg-config.
#
#   make            build build/muonbench (installing missing packages first)
#   make run        the main job
#   make test       build and run the tests (and check the C files' format)
#   make format     clang-format every C file in place (.clang-format)
#   make bench      time Newton-Schulz on the device (muonbench ns)
#   make baseline   write results/baseline-tiny.csv anew (CI compares against it)
#   make asan       the tests under AddressSanitizer and UBSan (in build-asan/)
#   make fuzz       libFuzzer on the config loaders and the results reader
#   make valgrind   one run of every stage and variant under memcheck
#   make install    PREFIX=/usr/local DESTDIR= (binary and man page)
#   make man        the man page, written from the binary's own --help
#   make WERROR=1   warnings are errors (as CI builds)
#   make MPI=off    without MPI even where it is installed (docs/mpi.md)

VERSION = 0.1.0
PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man/man1
BUILD ?= build

PKGS = OpenCL clblast numa libcjson
WARNINGS = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	   -Wformat=2 -Wvla
ifdef WERROR
WARNINGS += -Werror
endif
CFLAGS ?= -O2 -g
# -fno-math-errno: sqrtf without errno, so the host optimizer's loops vectorize
# (IEEE sqrt and division are correctly rounded either way: results do not change).
# Evaluated when a recipe runs, after deps has installed pkg-config's files.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS))
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -fopenmp -fno-math-errno $(WARNINGS) $(CFLAGS) -Ilib -Ilib/cl -Icmd \
	     -I$(BUILD) $(PKG_CFLAGS) -MMD -MP
ALL_LDLIBS = -fopenmp $(PKG_LIBS) $(MPI_LIBS) -lm $(LDLIBS)

# MPI, optional (docs/mpi.md): pkg-config's ompi-c or mpich, else the flags
# that mpicc says it adds (Open MPI's --showme, MPICH's -show); none found, or
# MPI=off: a build without it, which runs one rank. Only lib/mb_ranks.c
# includes <mpi.h>; $(BUILD)/mb_mpi_build.h says whether it may.
MPI ?= auto
ifneq ($(MPI),off)
MPI_PC := $(shell pkg-config --exists ompi-c 2>/dev/null && echo ompi-c || \
	    { pkg-config --exists mpich 2>/dev/null && echo mpich; })
ifneq ($(MPI_PC),)
MPI_CFLAGS := $(shell pkg-config --cflags $(MPI_PC))
MPI_LIBS := $(shell pkg-config --libs $(MPI_PC))
else ifneq ($(shell command -v mpicc 2>/dev/null),)
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null || mpicc -show 2>/dev/null | \
		tr ' ' '\n' | grep '^-I' | tr '\n' ' ')
MPI_LIBS := $(shell mpicc --showme:link 2>/dev/null || mpicc -show 2>/dev/null | \
	      tr ' ' '\n' | grep -E '^-(L|l|Wl)' | tr '\n' ' ')
MPI_PC := mpicc
endif
endif
MPI_FOUND = $(if $(MPI_PC),yes,)

LIB_SRC = $(wildcard lib/*.c lib/cl/*.c)
CMD_SRC = $(wildcard cmd/*.c)
TEST_SRC = $(wildcard tests/test_*.c)
EMBEDDED = $(sort $(wildcard configs/*.json kernels/*.cl tuning/*.json profiles/*.json))

LIB_OBJ = $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/embedded.o
CMD_OBJ = $(CMD_SRC:%.c=$(BUILD)/%.o)
TESTS = $(TEST_SRC:%.c=$(BUILD)/%)
BIN = $(BUILD)/muonbench

all: $(BIN)

deps:
	@scripts/deps.sh

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/embedded.c: scripts/embed.sh $(EMBEDDED)
	@mkdir -p $(dir $@)
	scripts/embed.sh $(EMBEDDED) > $@.tmp && mv $@.tmp $@

$(BUILD)/embedded.o: $(BUILD)/embedded.c | deps
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The git revision, rewritten only when it changes, so that the commands that
# include it (their .d files say which) rebuild then.
$(BUILD)/version.h: FORCE
	@mkdir -p $(dir $@)
	@rev=$$(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown); \
	printf '#define MB_VERSION "%s"\n#define MB_GIT_REV "%s"\n' '$(VERSION)' "$$rev" > $@.tmp; \
	cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(CMD_OBJ): | $(BUILD)/version.h

# Whether MPI is built in, rewritten only when that changes (mb_ranks.o rebuilds then).
$(BUILD)/mb_mpi_build.h: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(if $(MPI_FOUND),#define MB_HAVE_MPI 1 /* $(MPI_PC) */,/* built without MPI */)' > $@.tmp; \
	cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(BUILD)/lib/mb_ranks.o: ALL_CFLAGS += $(MPI_CFLAGS)
$(BUILD)/lib/mb_ranks.o: | $(BUILD)/mb_mpi_build.h

$(BUILD)/libmuonbench.a: $(LIB_OBJ)
	$(AR) rcs $@ $^

$(BIN): $(CMD_OBJ) $(BUILD)/libmuonbench.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(ALL_LDLIBS)

$(BUILD)/tests/test_%: $(BUILD)/tests/test_%.o $(BUILD)/libmuonbench.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(ALL_LDLIBS) $(shell pkg-config --libs cmocka)

$(BUILD)/muonbench.1: $(BIN) scripts/manpage.sh
	scripts/manpage.sh $(BIN) $(VERSION) > $@.tmp && mv $@.tmp $@

man: $(BUILD)/muonbench.1

# The main job on a CPU-only machine: the tiny model cut to one layer, in four
# batches, a 128-token forward/backward, stages 2 and 3, every variant, 16
# short runs of 3 steps (2 measured: a shared VM's slow spells last seconds, so
# many short runs average them out where a few long ones cannot; about a
# minute on 2 CPU cores with a shipped tuning), each cell beside its prediction
# from the device's profile (measured first, in under a minute, if there is none).
RUN_CELLS = --model tiny --layers 1 --gather-budget 2Mi --seq 128 --stage 2,3 --variant all \
	    --runs 16 --steps 3 --measure 2-3
run: $(BIN)
	$(BIN) profile --if-missing >/dev/null
	$(BIN) run $(RUN_CELLS)

# The gate's noise floor both ways (tests/noise.sh): ten pairs of identical
# tiny runs must compare all ok, a planted 25% slowdown must fail, compared
# as CI's gate compares (--ratios); and the apply's spread over ten
# `make run`s (tests/stability.sh). About 40 and 20 minutes, and only
# meaningful on a machine that nothing else keeps busy.
noise: $(BIN)
	rm -rf build/noise && tests/noise.sh $(BIN) build/noise --ratios
stability: $(BIN)
	rm -rf build/stability && RUN_ARGS='$(RUN_CELLS)' tests/stability.sh $(BIN) build/stability

# Newton-Schulz against its own GEMMs on the default device (about a minute on a CPU).
bench: $(BIN)
	$(BIN) ns

# The committed baseline that CI checks (see docs/compare.md, "The baseline"): the tiny
# model, one layer, every stage and variant, and ZeRO-3's batched apply; one
# `run` a group of options (--and between them, scripts/run-groups.sh);
# `make baseline` writes it anew.
BASELINE = results/baseline-tiny.csv
# Small enough a gather budget, sub-group and reduce bucket that a step of
# tiny has several batches, sub-groups and buckets: an ordering bug that
# needs a next one to reuse a buffer can happen (and the tests run with the
# race checker on, MUONBENCH_RACE_CHECK); the event writeback too.
BASELINE_CELLS = --model tiny --layers 1 --fwd-bwd off --gather-budget 2Mi --sub-group-size 200000 \
		 --reduce-bucket-size 300000 --profile off --variant all --runs 3 --steps 6 --measure 2-6
BASELINE_ARGS = $(BASELINE_CELLS) --stage 1,2,3 --and $(BASELINE_CELLS) --stage 3 --zero3-apply batched \
		--and $(BASELINE_CELLS) --stage 2,3 --writeback-dep event

baseline: $(BIN)
	rm -f $(BASELINE)
	scripts/run-groups.sh $(BIN) $(BASELINE) $(BASELINE_ARGS)

# The binary with the test-only variant row (lib/mb_variant.h, MB_TEST_VARIANT),
# phase row (lib/mb_phase.h, MB_TEST_PHASE) and knob row (lib/mb_knob.h,
# MB_TEST_KNOB), in a build of its own, for tests/variant_row.sh.
VARIANT_BIN = $(BUILD)-variant/muonbench

$(VARIANT_BIN): FORCE
	@$(MAKE) --no-print-directory BUILD=$(BUILD)-variant \
		CFLAGS="$(CFLAGS) -DMB_TEST_VARIANT -DMB_TEST_PHASE -DMB_TEST_KNOB" $@

# The tests' stand-in for a failing driver (tests/clshim.c), preloaded by tests/faults.sh.
SHIM = $(BUILD)/tests/clshim.so

$(SHIM): tests/clshim.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -pthread -o $@ $< -ldl

# A stand-in for NVIDIA's NVML (tests/nvml_stub.c), under NVML's name in a folder of its own.
NVML_STUB = $(BUILD)/tests/nvml/libnvidia-ml.so.1

$(NVML_STUB): tests/nvml_stub.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -o $@ $<

# Every C file in .clang-format's style (scripts/format.sh: skipped, with a
# note, without clang-format 14); make format fixes what it lists.
format-check:
	@scripts/format.sh --check

format:
	scripts/format.sh

test: $(BIN) $(TESTS) $(VARIANT_BIN) $(SHIM) $(NVML_STUB) format-check
	@BASELINE="$(BASELINE)" BASELINE_ARGS="$(BASELINE_ARGS)" VARIANT_BIN="$(VARIANT_BIN)" \
		SHIM="$(SHIM)" NVML_STUB="$(NVML_STUB)" MPI_FOUND="$(MPI_FOUND)" \
		tests/run.sh $(BIN) $(TESTS)

# Fuzzing (libFuzzer, clang): the config loader, the DeepSpeed-config reader
# and the results reader, each for FUZZ_SECONDS, from the seeds in tests/fuzz/
# and the configs and bad inputs the tests use; a finding stops it with the
# input saved in build-fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_SRC = lib/mb_config.c lib/mb_json.c lib/mb_model.c lib/mb_err.c lib/mb_num.c lib/mb_file.c \
	   lib/mb_csv.c lib/mb_results.c lib/mb_variant.c lib/mb_phase.c lib/mb_knob.c
FUZZ_CONFIG_SEEDS = configs tests/data/good tests/data/bad
FUZZ_CSV_SEEDS = tests/fuzz/csv
FUZZ_DS_SEEDS = tests/data/ds

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_SRC) $(BUILD)/embedded.c | deps fuzz-deps
	@mkdir -p build-fuzz
	clang -std=c11 -D_POSIX_C_SOURCE=200809L $(FUZZ_FLAGS) -Ilib -Ilib/cl $(PKG_CFLAGS) -o $@ $^ \
		$(shell pkg-config --libs libcjson) -lm

# The DeepSpeed-config reader needs only the JSON reader, the file opener and the errors.
FUZZ_DS_SRC = lib/mb_dsconfig.c lib/mb_json.c lib/mb_err.c lib/mb_file.c

build-fuzz/fuzz_dsconfig: tests/fuzz/fuzz_dsconfig.c $(FUZZ_DS_SRC) | deps fuzz-deps
	@mkdir -p build-fuzz
	clang -std=c11 -D_POSIX_C_SOURCE=200809L $(FUZZ_FLAGS) -Ilib -Ilib/cl $(PKG_CFLAGS) -o $@ $^ \
		$(shell pkg-config --libs libcjson)

fuzz-deps:
	@scripts/deps.sh clang libclang-rt-14-dev

fuzz: fuzz-deps build-fuzz/fuzz_config build-fuzz/fuzz_csv build-fuzz/fuzz_dsconfig
	@mkdir -p build-fuzz/corpus-config build-fuzz/corpus-csv build-fuzz/corpus-dsconfig
	cd build-fuzz && ./fuzz_config -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
		-print_final_stats=1 corpus-config $(FUZZ_CONFIG_SEEDS:%=../%)
	cd build-fuzz && ./fuzz_csv -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
		-print_final_stats=1 corpus-csv $(FUZZ_CSV_SEEDS:%=../%)
	cd build-fuzz && ./fuzz_dsconfig -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
		-print_final_stats=1 corpus-dsconfig $(FUZZ_DS_SEEDS:%=../%)

# Every stage and variant once, on the micro test model (the tiny one takes
# too long under valgrind), with memcheck: any error or definite leak fails.
# It passes on a cold PoCL kernel cache too (a fresh machine; about four
# times as slow as a warm one): tests/valgrind.supp suppresses the leaks that
# PoCL and LLVM make while compiling kernels, by where they are allocated, and
# a false positive in ld.so; a leak of our own still fails. --num-callers is
# deep enough for those suppressions to see PoCL's frames.
valgrind: $(BIN)
	@scripts/deps.sh valgrind
	MUONBENCH_RACE_CHECK=1 valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
		--suppressions=tests/valgrind.supp --num-callers=32 \
		--show-leak-kinds=definite $(BIN) run --config tests/data/good/micro.json \
		--seq 16 --stage 1,2,3 --variant all --runs 1 --steps 2 --quiet \
		--out $(BUILD)/valgrind.csv >/dev/null
	@rm -f $(BUILD)/valgrind.csv

ASAN_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	     -fno-sanitize-recover=all
# LeakSanitizer leaves PoCL's and LLVM's own kernel-compile leaks aside (tests/lsan.supp).
# use_tls=0: its tracer crashed ("Tracer caught signal 11", addr 0x7b0) scanning the
# thread-local storage of PoCL's threads after a cold kernel compile whose cache
# path ($XDG_CACHE_HOME/pocl) is long, with every muonbench binary back to ef9ce1f.
# Without the TLS as roots, a block that only TLS holds is reported as a leak: this
# can add a report, never hide one. MPI=off: Open MPI's own allocations would
# be LeakSanitizer's reports; mpi.sh runs in make test, and says skip here.
asan:
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0:use_tls=0 \
		$(MAKE) BUILD=build-asan MPI=off CFLAGS="$(ASAN_FLAGS)" LDFLAGS="$(ASAN_FLAGS)" test

install: $(BIN) $(BUILD)/muonbench.1
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/muonbench
	install -m 644 $(BUILD)/muonbench.1 $(DESTDIR)$(MANDIR)/muonbench.1

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/muonbench $(DESTDIR)$(MANDIR)/muonbench.1

clean:
	rm -rf build build-asan build-fuzz

FORCE:
.PHONY: all deps man run bench noise stability baseline test format format-check asan fuzz fuzz-deps valgrind install uninstall clean FORCE

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
