# C tests: what each test binary needs beyond build/libsandkit_core.a.
# The network tests (http_test, ws_test) include the echo server's C
# harness, so they rebuild when it changes; they start
# spec/servers/echo/server.mjs themselves (its npm ci is done by npm-deps).
build/test/http_test build/test/ws_test build/test/h2c_fault_test: spec/servers/echo/harness.h

# spec/modal_schema_spec.lua re-encodes the Modal goldens
# (spec/c/modal_goldens.txt) with protoc over modal.proto; the build itself
# needs no protoc (tools/modal_gen.lua generates the C tables).
DEB_PACKAGES += protobuf-compiler

# spec/oom_spec.lua preloads this allocator fault injector into a child Lua.
build/test/oom_inject.so: spec/c/oom_inject.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -o $@ $<
TEST_PREP += build/test/oom_inject.so
