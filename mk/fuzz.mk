# libFuzzer harnesses: every spec/fuzz/fuzz_<name>.c becomes
# build-fuzz/fuzz_<name>, linked with the core built by clang with coverage,
# ASan and UBSan. Seeds: spec/fuzz/corpus/<name>/ (committed); what a run
# finds goes to build-fuzz/corpus/<name>/, crashes to build-fuzz/artifacts/.
#   make fuzz                  each fuzzer for FUZZ_SECONDS (default 60)
#   make fuzz FUZZ_SECONDS=10  what CI runs (.ci/run)
#   make fuzz FUZZERS=shell    one of them
# It ends with "N passed, N failed" like make test (spec/fuzz/run.sh).
# Each harness is also linked with spec/fuzz/replay.c (no libFuzzer) into a
# C test, build/test/fuzz_<name>_replay_test, that replays its committed
# corpus: `make test` (and the sanitizer runs) re-run every seed and every
# input that once crashed a fuzzer.


FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1 -g
FUZZERS ?= $(patsubst spec/fuzz/fuzz_%.c,%,$(wildcard spec/fuzz/fuzz_*.c))

FUZZ_REPLAY_TESTS := $(patsubst spec/fuzz/fuzz_%.c,fuzz_%_replay_test,$(wildcard spec/fuzz/fuzz_*.c))

# $(1) build directory, $(2) compiler, $(3) extra flags (sanitizers.mk adds
# its variants).
define fuzz_replay_rule
$(1)/test/fuzz_%_replay_test: spec/fuzz/fuzz_%.c spec/fuzz/replay.c $(1)/libsandkit_core.a
	@mkdir -p $$(dir $$@)
	$(2) $$(CFLAGS) $(3) -Isrc/core -DFUZZ_CORPUS='"spec/fuzz/corpus/$$*"' $$< spec/fuzz/replay.c $(1)/libsandkit_core.a $$(LIBS) -o $$@
endef
$(eval $(call fuzz_replay_rule,build,$$(CC),))
TEST_PREP += $(addprefix build/test/,$(FUZZ_REPLAY_TESTS))

build-fuzz/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

build-fuzz/libsandkit_core.a: $(CORE_SRC:%.c=build-fuzz/obj/%.o)
	rm -f $@ && ar rcs $@ $^

build-fuzz/fuzz_%: spec/fuzz/fuzz_%.c build-fuzz/libsandkit_core.a
	$(FUZZ_CC) $(CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -Isrc/core $< build-fuzz/libsandkit_core.a $(LIBS) -o $@

.PHONY: fuzz fuzz-build
fuzz-build: $(addprefix build-fuzz/fuzz_,$(FUZZERS))

fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	@sh spec/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZERS)

clean: clean-fuzz
.PHONY: clean-fuzz
clean-fuzz:
	rm -rf build-fuzz

