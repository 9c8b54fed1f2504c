# The other Lua versions: LuaJIT 2.1, Lua 5.1 and Lua 5.3 beside the
# reference 5.4, from one source (src/lua/lua_compat.h; compat-5.3 from
# Debian's lua-compat53-dev before 5.3).
#   make LUA=luajit            build-luajit/sandkit/core.so (LUA_VERSION=5.1
#                              or 5.3: build-lua5.1/, build-lua5.3/); the
#                              core objects (no Lua in them) are build/'s
#   make test-luajit           the specs of LUA_SPECS under LuaJIT, against
#   make test-lua51            that build; likewise Lua 5.1 and 5.3. Each
#   make test-lua53            ends "N passed, N failed" like make test.
# The other specs run under 5.4 alone (make test): docs/lua-versions.md.

DEB_PACKAGES += luajit libluajit-5.1-dev lua5.1 liblua5.1-0-dev lua5.3 liblua5.3-dev lua-compat53-dev

# Where compat-5.3.h is: Debian keeps it with the Lua 5.1 headers, which
# LuaJIT's build searches after its own (compat-5.3.h includes <lua.h>).
COMPAT53_INCDIR ?= /usr/include/lua5.1
LUA_CFLAGS_luajit := $(shell pkg-config --cflags luajit 2>/dev/null) -isystem $(COMPAT53_INCDIR)
LUA_CFLAGS_lua5.1 := $(shell pkg-config --cflags lua5.1 2>/dev/null)
LUA_CFLAGS_lua5.3 := $(shell pkg-config --cflags lua5.3 2>/dev/null)

# One interpreter's binding: $(1) its name. Its -I comes before 5.4's in
# CFLAGS, so its lua.h is the one found.
define lua_variant
build-$(1)/obj/%.o: %.c $$(HEADERS)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LUA_CFLAGS_$(1)) $$(CFLAGS) -c $$< -o $$@

build-$(1)/sandkit/core.so: $$(CORE_OBJ) $$(LUA_SRC:%.c=build-$(1)/obj/%.o)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(SHARED_LDFLAGS) -o $$@ $$^ $$(LIBS)
endef
$(foreach v,luajit lua5.1 lua5.3,$(eval $(call lua_variant,$(v))))

# Its `sandkit` command: bin/sandkit under that interpreter (bin/sandkit's
# own first line names lua5.4), for `make env LUA=...`.
build-%/bin/sandkit: bin/sandkit
	@mkdir -p $(dir $@)
	printf '#!/bin/sh\nexec %s %s "$$@"\n' '$(LUA)' '$(CURDIR)/bin/sandkit' > $@
	chmod +x $@

# The specs every interpreter runs: the API, the scheduler, the
# conformance suite of every provider, files, the CLI, and the host loops.
LUA_SPECS := spec/api_spec.lua spec/api_helpers_spec.lua spec/bad_input_spec.lua spec/buffer_spec.lua \
	spec/trust_sched_spec.lua spec/lifetime_spec.lua $(sort $(wildcard spec/conformance/*_spec.lua)) \
	spec/fs_local_spec.lua spec/fs_platform_spec.lua spec/fs_remote_spec.lua spec/fs_docker_spec.lua \
	spec/cli_spec.lua spec/cli_cp_spec.lua spec/host_loops_spec.lua

.PHONY: test-lua test-luajit test-lua51 test-lua53
test-luajit:
	@$(MAKE) --no-print-directory test-lua LUA=luajit
test-lua51:
	@$(MAKE) --no-print-directory test-lua LUA=lua5.1
test-lua53:
	@$(MAKE) --no-print-directory test-lua LUA=lua5.3

# LUA_SPECS under $(LUA), against its build.
test-lua: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory npm-deps
	@SANDKIT_BUILD=$(LUA_BUILD) SANDKIT_LUA_BUILD=$(LUA_BUILD) SANDKIT_SPECS="$(LUA_SPECS)" \
	  LUA=$(LUA) sh spec/run.sh

clean: clean-lua
.PHONY: clean-lua
clean-lua:
	rm -rf build-luajit build-lua5.1 build-lua5.3
