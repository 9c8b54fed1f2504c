# The portable build: build-portable/ compiles the core
# with -DSK_PORTABLE, which forces every fallback of src/core/compat.h (no
# pidfd, getrandom, pipe2, F_SETPIPE_SZ or glibc spawn extensions: what a
# macOS build does without), and `make test-portable` runs the whole suite
# against it (spec/run.sh with SANDKIT_BUILD=build-portable). CI runs it.


PORTABLE_FLAGS := -DSK_PORTABLE

build-portable/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PORTABLE_FLAGS) -c $< -o $@

build-portable/libsandkit_core.a: $(CORE_SRC:%.c=build-portable/obj/%.o)
	rm -f $@ && ar rcs $@ $^

build-portable/sandkit/core.so: $(CORE_SRC:%.c=build-portable/obj/%.o) $(LUA_SRC:%.c=build-portable/obj/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(SHARED_LDFLAGS) -o $@ $^ $(LIBS)

build-portable/test/%: spec/c/%.c build-portable/libsandkit_core.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PORTABLE_FLAGS) -Isrc/core $< build-portable/libsandkit_core.a $(LIBS) -o $@

$(eval $(call fuzz_replay_rule,build-portable,$$(CC),$(PORTABLE_FLAGS)))

.PHONY: portable-build test-portable
portable-build: build-portable/sandkit/core.so \
	$(patsubst build/test/%,build-portable/test/%,$(C_TESTS)) \
	$(addprefix build-portable/test/,$(FUZZ_REPLAY_TESTS))

# The plain build too: some specs run subprocesses against build/.
test-portable: deps
	@$(MAKE) --no-print-directory all $(C_TESTS) portable-build
	@$(MAKE) --no-print-directory npm-deps $(TEST_PREP)
	@SANDKIT_BUILD=build-portable LUA=$(LUA) sh spec/run.sh

clean: clean-portable
.PHONY: clean-portable
clean-portable:
	rm -rf build-portable

