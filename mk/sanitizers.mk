# Sanitizer runs of the whole spec suite, through spec/run.sh with
# SANDKIT_BUILD (build directory) and SANDKIT_WRAP (command prefix):
#   make test-asan       build-asan/: core.so and the C tests with ASan+UBSan;
#                        lua5.4 runs with the runtimes preloaded
#                        (build-asan/bin/asan-run); LeakSanitizer at exit.
#   make test-valgrind   build-valgrind/ (-O1, no sanitizer) under memcheck.
# Suppressions: spec/sanitizers/lsan.supp, spec/sanitizers/valgrind.supp.
# docs/reliability.md describes both.


DEB_PACKAGES += valgrind clang libclang-rt-14-dev

ASAN_CC ?= gcc
ASAN_FLAGS := -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -O1 -g
VALGRIND_FLAGS := -O1 -g
# Lua is not instrumented: the runtimes are preloaded into it. gcc's ASan
# and UBSan runtimes are separate libraries; both go first.
ASAN_PRELOAD = $(shell $(ASAN_CC) -print-file-name=libasan.so) $(shell $(ASAN_CC) -print-file-name=libubsan.so)
LUA_BIN = $(shell command -v $(LUA))

VALGRIND := valgrind --quiet --error-exitcode=1 --leak-check=full \
	--show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
	--suppressions=$(CURDIR)/spec/sanitizers/valgrind.supp --trace-children=no \
	--child-silent-after-fork=yes --num-callers=30

SANITIZER_C_TESTS := $(patsubst spec/c/%.c,%,$(wildcard spec/c/*_test.c))

# One variant build: $(1) directory, $(2) compiler, $(3) extra flags.
# Objects, the static core, core.so and the C tests, as the main build.
define sanitizer_variant
$(1)/obj/%.o: %.c $$(HEADERS)
	@mkdir -p $$(dir $$@)
	$(2) $$(CFLAGS) $(3) -c $$< -o $$@

$(1)/libsandkit_core.a: $$(CORE_SRC:%.c=$(1)/obj/%.o)
	rm -f $$@ && ar rcs $$@ $$^

$(1)/sandkit/core.so: $$(CORE_SRC:%.c=$(1)/obj/%.o) $$(LUA_SRC:%.c=$(1)/obj/%.o)
	@mkdir -p $$(dir $$@)
	$(2) $(3) -shared -o $$@ $$^ $$(LIBS)

$(1)/test/%: spec/c/%.c $(1)/libsandkit_core.a
	@mkdir -p $$(dir $$@)
	$(2) $$(CFLAGS) $(3) -Isrc/core $$< $(1)/libsandkit_core.a $$(LIBS) -o $$@

$(1)-build: $(1)/sandkit/core.so $(addprefix $(1)/test/,$(SANITIZER_C_TESTS) $(FUZZ_REPLAY_TESTS))
$(call fuzz_replay_rule,$(1),$(2),$(3))
endef

$(eval $(call sanitizer_variant,build-asan,$(ASAN_CC),$(ASAN_FLAGS)))
$(eval $(call sanitizer_variant,build-valgrind,$(CC),$(VALGRIND_FLAGS)))

build-asan/env_scrub.so: spec/sanitizers/env_scrub.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -shared -o $@ $<

build-asan/bin/asan-run: spec/sanitizers/asan-run.in build-asan/env_scrub.so
	@mkdir -p $(dir $@)
	sed -e 's|@ROOT@|$(CURDIR)|g' -e 's|@PRELOAD@|$(ASAN_PRELOAD) $(CURDIR)/build-asan/env_scrub.so|g' $< > $@
	chmod +x $@

# In a directory shaped like a Lua prefix (bin/, include/): luarocks, run
# by a spec, takes the Lua it finds first in PATH for the installation.
LUA_INCDIR = $(patsubst -I%,%,$(firstword $(filter -I%lua5.4,$(shell pkg-config --cflags-only-I lua5.4))))
build-asan/lua/bin/lua5.4: spec/sanitizers/lua.in build-asan/bin/asan-run
	@mkdir -p $(dir $@)
	sed -e 's|@BIN@|$(CURDIR)/build-asan/bin|g' -e 's|@LUA@|$(LUA_BIN)|g' $< > $@
	chmod +x $@
	ln -sfn $(LUA_INCDIR) build-asan/lua/include

.PHONY: test-asan test-valgrind build-asan-build build-valgrind-build
build-asan-build: build-asan/lua/bin/lua5.4

# The plain build too: some specs run subprocesses against build/.
test-asan: deps
	@$(MAKE) --no-print-directory all $(C_TESTS) build-asan-build
	@$(MAKE) --no-print-directory npm-deps $(TEST_PREP)
	@SANDKIT_BUILD=build-asan SANDKIT_WRAP=$(CURDIR)/build-asan/bin/asan-run \
	  PATH="$(CURDIR)/build-asan/lua/bin:$$PATH" LUA=lua5.4 sh spec/run.sh

# Slow (memcheck is 20-50x): each runner gets up to an hour.
test-valgrind: deps
	@$(MAKE) --no-print-directory all $(C_TESTS) build-valgrind-build
	@$(MAKE) --no-print-directory npm-deps $(TEST_PREP)
	@SANDKIT_BUILD=build-valgrind SANDKIT_WRAP="$(VALGRIND)" \
	  SANDKIT_TEST_TIMEOUT=$${SANDKIT_TEST_TIMEOUT:-3600} LUA=$(LUA) sh spec/run.sh

clean: clean-sanitizers
.PHONY: clean-sanitizers
clean-sanitizers:
	rm -rf build-asan build-valgrind

