# sandkit: build in place (build/), test, demo. `make test` and `make demo`
# install missing Debian packages when run as root, or print the command.

CC ?= cc
LUA ?= lua5.4
# LUA_VERSION=5.1, 5.3 or 5.4 picks lua<version>; LUA=luajit, LuaJIT. build/
# is 5.4's; another interpreter's binding is built in build-<lua>/, its
# `sandkit` command in build-<lua>/bin/ (mk/lua.mk).
ifneq ($(LUA_VERSION),)
LUA := lua$(LUA_VERSION)
endif
LUA_NAME = $(notdir $(LUA))
LUA_BUILD = $(if $(filter lua5.4 lua,$(LUA_NAME)),build,build-$(LUA_NAME))
LUA_BIN_DIR = $(if $(filter build,$(LUA_BUILD)),bin,$(LUA_BUILD)/bin)
# The Lua version luarocks installs for: LuaJIT's is 5.1.
LUA_ABI = $(if $(filter luajit,$(LUA_NAME)),5.1,$(or $(patsubst lua%,%,$(filter lua5.%,$(LUA_NAME))),5.4))
# Homebrew's Lua 5.4 has lua.pc (Debian: lua5.4.pc).
LUA_PC := $(shell pkg-config --exists lua5.4 2>/dev/null && echo lua5.4 || echo lua)
PKGS := libuv libcurl jansson libwebsockets libcrypto libarchive $(LUA_PC)
CFLAGS ?= -O2 -g
# -fvisibility=hidden: core.so exports luaopen_sandkit_core alone (SKL_EXPORT,
# src/lua/binding.h); the static library the C tests link is unaffected.
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -fvisibility=hidden $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS := $(shell pkg-config --libs libuv libcurl jansson libwebsockets libcrypto libarchive 2>/dev/null) -lm
# A Lua module on macOS is a bundle whose Lua symbols come from the host.
SHARED_LDFLAGS := $(if $(filter Darwin,$(shell uname -s)),-bundle -undefined dynamic_lookup,-shared)

# Debian packages the build and the tests need (fragments may add more).
# Node.js and npm (reference servers) count as present when the commands
# exist, whatever installed them.
DEB_PACKAGES := build-essential pkg-config lua5.4 liblua5.4-dev luarocks lua-busted lua-cjson \
	lua-cqueues libuv1-dev libcurl4-openssl-dev libwebsockets-dev libwebsockets-evlib-uv \
	libjansson-dev libssl-dev libarchive-dev bubblewrap procps curl util-linux openssl lua-luv

CORE_SRC := $(sort $(wildcard src/core/*.c src/core/providers/*.c src/core/providers/*/*.c))
LUA_SRC := $(sort $(wildcard src/lua/*.c))
CORE_OBJ := $(CORE_SRC:%.c=build/obj/%.o)
LUA_OBJ := $(LUA_SRC:%.c=build/obj/%.o)
# Modal's message types and field tables, generated from modal.proto at
# build time (tools/modal_gen.lua; modal_msg.h says how they are used):
# every object depends on it through HEADERS.
MODAL_PB := build/gen/modal_pb.h
CFLAGS += -Ibuild/gen
HEADERS := $(wildcard src/core/*.h src/core/providers/*/*.h src/lua/*.h) $(MODAL_PB)
C_TESTS := $(patsubst spec/c/%.c,build/test/%,$(wildcard spec/c/*_test.c))
TEST_PREP :=

.PHONY: all deps test demo docs clean check-deps spec-c npm-deps rock env

all: $(LUA_BUILD)/sandkit/core.so build/libsandkit_core.a $(if $(filter bin,$(LUA_BIN_DIR)),,$(LUA_BIN_DIR)/sandkit)

include $(wildcard mk/*.mk)

$(MODAL_PB): src/core/providers/modal/third_party/modal.proto tools/modal_gen.lua
	@mkdir -p $(dir $@)
	$(LUA) tools/modal_gen.lua $< $@

build/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The registry line of a provider rebuilds the registry alone (in every
# build directory the fragments add).
$(addsuffix /obj/src/core/providers/registry.o,build build-asan build-valgrind build-portable build-fuzz): \
	src/core/providers/providers.def

build/libsandkit_core.a: $(CORE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

build/sandkit/core.so: $(CORE_OBJ) $(LUA_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SHARED_LDFLAGS) -o $@ $^ $(LIBS)

build/test/%: spec/c/%.c build/libsandkit_core.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc/core $< build/libsandkit_core.a $(LIBS) -o $@

# Installs what is missing (as root), or prints the command to run.
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done; \
	  command -v node >/dev/null 2>&1 || echo nodejs; command -v npm >/dev/null 2>&1 || echo npm); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing: $$missing"; \
	    (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing packages; run: sudo apt-get install -y $$missing"; exit 1; \
	  fi; \
	fi

# npm ci in every reference-server folder that has a lock file.
npm-deps:
	@for d in spec/servers/*/; do \
	  if [ -f "$$d/package-lock.json" ] && [ ! -d "$$d/node_modules" ]; then \
	    echo "npm ci in $$d"; (cd "$$d" && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
	  fi; \
	done

test: deps
	@$(MAKE) --no-print-directory all $(C_TESTS)
	@$(MAKE) --no-print-directory npm-deps $(TEST_PREP)
	@LUA=$(LUA) sh spec/run.sh

demo: deps
	@$(MAKE) --no-print-directory all
	@LUA_CPATH='$(LUA_BUILD)/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' $(LUA) examples/demo.lua
	@echo 'To use this build from your own scripts and shell: eval "$$(make -s env$(if $(filter build,$(LUA_BUILD)),, LUA=$(LUA)))"'

# An alias: every generated block, the docs' included (mk/generated.mk).
docs: generated

# The exports that put this clone's build on the paths: `eval "$(make -s
# env)"`, then `require "sandkit"` and the `sandkit` command work from any
# directory (builds first when needed).
env: all
	$(if $(findstring ',$(CURDIR)),$(error make env: the clone's path contains a single quote))
	@printf '%s\n' \
	  "export LUA_PATH='$(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;'\"\$${LUA_PATH:-;}\"" \
	  "export LUA_CPATH='$(CURDIR)/$(LUA_BUILD)/?.so;'\"\$${LUA_CPATH:-;}\"" \
	  "export PATH='$(CURDIR)/$(LUA_BIN_DIR):'\"\$$PATH\""

# Installs the rock, built in a copy of the sources (build/rock-src) so that
# no object file or core.so lands in the tree. LUAROCKS_FLAGS picks the tree:
# --local (~/.luarocks) or --tree=DIR; the default is luarocks' own
# (/usr/local as root).
LUAROCKS_FLAGS ?=
# The rockspec compiles build/gen/modal_pb.h in (luarocks' builtin back-end
# runs no generator): made first, and copied with the sources.
rock: deps $(MODAL_PB)
	rm -rf build/rock-src && mkdir -p build/rock-src/build && cp -R src lua bin rockspec docs examples LICENSE build/rock-src/ && cp -R build/gen build/rock-src/build/
	cd build/rock-src && luarocks --lua-version=$(LUA_ABI) $(LUAROCKS_FLAGS) make --deps-mode=none rockspec/sandkit-scm-1.rockspec CFLAGS="-O2 -fPIC -std=c11 -fvisibility=hidden"

clean:
	rm -rf build
