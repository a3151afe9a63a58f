# Reliability targets, included by the Makefile.
#
#   make fuzz [FUZZ_SECONDS=N] [FUZZ_TARGETS="gguf npy"]
#       builds each fuzz target with clang + libFuzzer (ASan, UBSan, LSan) in
#       build/fuzz and runs it N seconds (default 60) from the seed corpus;
#       fails if any target found a crash, leak, timeout or out-of-memory.
#       Installs clang and libclang-rt-14-dev when missing (as root).
#   make fuzz-long [FUZZ_SECONDS=1800]
#       every target for that long (default 30 minutes), two at a time, in
#       the background; build/fuzz/long.log, and the campaign table with the
#       commit in build/fuzz/campaign.md (tests/fuzz/campaign.sh), the rows
#       of tests/RELIABILITY.md's campaign table.
#   make fuzz-replay   (part of `make test`, so also of `make asan`)
#       reruns every seed and regression input through every target, built
#       with $(CC) and a plain main(); no clang needed.
#   make valgrind
#       a session (load, prompt, gen, export, quit) under valgrind: no leaks,
#       no invalid reads (tests/valgrind.sh).
#   make tui-stress   (part of `make test`)
#       the full-screen view under resize storms, tiny terminals, TERM=dumb,
#       NO_COLOR, non-UTF-8 locales, paste floods and signals
#       (tests/test_reliability_tui.sh).

FUZZ_TARGETS ?= gguf model tokenizer session npy llama2c hf image run
FUZZ_SECONDS ?= 60
FUZZ_BUILD    = build/fuzz
FUZZ_CC      ?= clang
FUZZ_SAN      = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer $(WARN) -Iinclude -Isrc \
                -DAS_DATADIR='"$(DATADIR)"' -DAS_VERSION='"$(VERSION)"' $(PKG_CFLAGS) \
                -DAS_FIXTURE_DIR='"$(abspath tests/fixtures)"'
FUZZ_LIB_OBJS = $(LIB_SRCS:%.c=$(FUZZ_BUILD)/%.o) $(SIMD_ISAS:%=$(FUZZ_BUILD)/src/simd/kernels_%.o)
FUZZ_COMMON   = tests/fuzz/fuzz_common.c tests/fuzz/fuzz.h
# Options every libFuzzer run gets; -max_len covers the seed models.
FUZZ_OPTS     = -timeout=20 -rss_limit_mb=3072 -print_final_stats=1
FUZZ_MAXLEN   = 65536
# Seeds kept elsewhere in the repository, used as they are: the test
# fixtures are a small valid file of every architecture attnscope reads
# (bert, nomic-bert, t5, t5encoder, transformer, vit, deepseek2 in five
# variants, qwen2moe, mixtral, gemma 1-3, phi3, qwen2/3, llama 3, mistral),
# so the loaders of all of them are fuzzed (their files are up to 350 KB).
FUZZ_SEEDS_model = $(wildcard tests/fixtures/*.gguf)
FUZZ_SEEDS_gguf  = $(wildcard tests/fixtures/*.gguf)
FUZZ_MAXLEN_model = 400000
FUZZ_MAXLEN_gguf  = 400000

REPLAY_DIR    = $(BUILD)/fuzz-replay
REPLAY_BINS   = $(FUZZ_TARGETS:%=$(REPLAY_DIR)/fuzz_%)

.PHONY: fuzz fuzz-build fuzz-deps fuzz-replay fuzz-corpus valgrind tui-stress fuzz-long fuzz-campaign

# ---- libFuzzer builds (clang) ----

fuzz-deps:
	@$(call need,make fuzz,$(FUZZ_NEEDS),hard)

$(FUZZ_BUILD)/src/%.o: src/%.c $(BUILD)/config.mk | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(SIMD_ISAS:%=$(FUZZ_BUILD)/src/simd/kernels_%.o): $(FUZZ_BUILD)/src/simd/kernels_%.o: $(SIMD_SRC) $(BUILD)/config.mk | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(SIMD_FLAGS_$*) -DAS_ISA=$* -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/libattnscope.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_COMMON) $(FUZZ_BUILD)/libattnscope.a | fuzz-deps
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer $< tests/fuzz/fuzz_common.c \
	  $(FUZZ_BUILD)/libattnscope.a $(LIB_DEPS) -o $@

fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

# Each target runs from a working copy of its seeds (build/fuzz/corpus/T),
# so what it discovers never lands in the repository by accident; what it
# finds goes to build/fuzz/artifacts/T. `make -j2 fuzz` runs two at once.
# build/fuzz/summary.txt gets one line per target: executions, coverage,
# corpus size and findings.
fuzz: $(FUZZ_TARGETS:%=fuzz-run-%)
	@cat $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/%.summary) > $(FUZZ_BUILD)/summary.txt
	@echo "fuzz summary ($(FUZZ_BUILD)/summary.txt):"; sed 's/^/  /' $(FUZZ_BUILD)/summary.txt
	@! grep -v ' 0 findings (exit 0)' $(FUZZ_BUILD)/summary.txt >/dev/null

FUZZ_LONG_SECONDS ?= 1800
fuzz-long: fuzz-deps
	@mkdir -p $(FUZZ_BUILD)
	@{ git rev-parse --short=10 HEAD; git status --porcelain --untracked-files=no | grep -q . && echo dirty; } \
	  > $(FUZZ_BUILD)/campaign.commit 2>/dev/null; true
	@nohup $(MAKE) --no-print-directory -j2 fuzz-campaign FUZZ_SECONDS=$(if $(filter command line,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS),$(FUZZ_LONG_SECONDS)) \
	  > $(FUZZ_BUILD)/long.log 2>&1 &
	@echo "fuzz-long: $(words $(FUZZ_TARGETS)) targets, two at a time, in the background: $(FUZZ_BUILD)/long.log;" \
	  "the table goes to $(FUZZ_BUILD)/campaign.md"

fuzz-campaign: $(FUZZ_TARGETS:%=fuzz-run-%)
	@sh tests/fuzz/campaign.sh $(FUZZ_BUILD) $(FUZZ_TARGETS) > $(FUZZ_BUILD)/campaign.md
	@cat $(FUZZ_BUILD)/campaign.md

fuzz-run-%: $(FUZZ_BUILD)/fuzz_%
	@t=$*; mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t; \
	cp -n tests/fuzz/corpus/$$t/* $(FUZZ_SEEDS_$*) $(FUZZ_BUILD)/corpus/$$t/ 2>/dev/null; \
	dict=""; [ -f tests/fuzz/$$t.dict ] && dict="-dict=tests/fuzz/$$t.dict"; \
	echo "fuzz $$t for $(FUZZ_SECONDS) s ..."; \
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
	LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan.supp):print_suppressions=0 \
	$(FUZZ_BUILD)/fuzz_$$t $(FUZZ_OPTS) -max_len=$(or $(FUZZ_MAXLEN_$*),$(FUZZ_MAXLEN)) $$dict \
	  -max_total_time=$(FUZZ_SECONDS) \
	  -artifact_prefix=$(abspath $(FUZZ_BUILD))/artifacts/$$t/ $(FUZZ_BUILD)/corpus/$$t \
	  > $(FUZZ_BUILD)/$$t.log 2>&1; rc=$$?; \
	execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_BUILD)/$$t.log | tail -1); \
	cov=$$(grep -E '^#[0-9]+' $(FUZZ_BUILD)/$$t.log | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p'); \
	rate=$$(sed -n 's/^stat::average_exec_per_sec: *//p' $(FUZZ_BUILD)/$$t.log | tail -1); \
	secs=$(FUZZ_SECONDS); [ -n "$$execs" ] && [ "$${rate:-0}" -gt 0 ] && secs=$$((execs / rate)); \
	units=$$(ls $(FUZZ_BUILD)/corpus/$$t | wc -l); \
	found=$$(ls $(FUZZ_BUILD)/artifacts/$$t | wc -l); \
	echo "$$t: $$secs s (of $(FUZZ_SECONDS)), $${execs:-?} executions, $${cov:-?} coverage edges, corpus $$units inputs, $$found findings (exit $$rc)" \
	  > $(FUZZ_BUILD)/$$t.summary; \
	cat $(FUZZ_BUILD)/$$t.summary; \
	if [ $$rc != 0 ] || [ $$found != 0 ]; then \
	  echo "  see $(FUZZ_BUILD)/$$t.log and $(FUZZ_BUILD)/artifacts/$$t/"; \
	  grep -E 'ERROR|runtime error|fuzz property' $(FUZZ_BUILD)/$$t.log | head -5 | sed 's/^/    /'; fi

# ---- replay without libFuzzer (in make test) ----

$(REPLAY_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(FUZZ_COMMON) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ENGINE) -DAS_FIXTURE_DIR='"$(abspath tests/fixtures)"' $< tests/fuzz/fuzz_common.c \
	  tests/fuzz/replay.c $(LIB) $(SAN) $(LIB_DEPS) -o $@

fuzz-replay: $(REPLAY_BINS) $(PROG)
	@$(foreach t,$(FUZZ_TARGETS),$(REPLAY_DIR)/fuzz_$(t) tests/fuzz/corpus/$(t) tests/fuzz/regressions/$(t) \
	  $(FUZZ_SEEDS_$(t)) || exit 1;)
	@# the session fuzzer's words follow `help`: a new command joins its dictionary
	@missing=$$($(PROG) --no-tui -e help 2>/dev/null | awk '{print $$1}' | sort -u | while read w; do \
	  grep -qx "\"$$w\"" tests/fuzz/session.dict || printf '%s ' "$$w"; done); \
	  if [ -n "$$missing" ]; then echo "fuzz-replay: tests/fuzz/session.dict lacks the commands $$missing"; exit 1; fi; \
	  echo "fuzz-replay: every command help lists is in the session fuzzer's dictionary"

# Regenerates the seed models of tests/fuzz/corpus (committed; run after
# changing make_corpus.c).
$(BUILD)/make-corpus: tests/fuzz/make_corpus.c tests/fuzz/tiny_models.c tests/fuzz/tiny_models.h $(LIB)
	$(CC) $(CFLAGS_ENGINE) tests/fuzz/make_corpus.c $(LIB) $(SAN) $(LIB_DEPS) -o $@

fuzz-corpus: $(BUILD)/make-corpus
	$(BUILD)/make-corpus tests/fuzz/corpus

# ---- valgrind, and the full-screen view under stress ----

valgrind:
	@$(call need,make valgrind,$(VALGRIND_NEEDS),hard)
	sh tests/valgrind.sh

tui-stress: $(PROG) test-deps
	AS_BIN=$(abspath $(PROG)) sh tests/test_reliability_tui.sh

-include $(FUZZ_LIB_OBJS:.o=.d)
