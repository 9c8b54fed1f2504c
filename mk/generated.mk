# Generated text (tools/generate.lua), each fact stated once: the
# rockspecs' source and module lists from the Makefile's lists below, the
# LuaLS stub's provider classes and constructors and docs/providers.md's
# option tables from the providers' descriptors, the stub's and
# docs/sandbox.md's exec options (lua/sandkit/options.lua), the stub's and
# docs/errors.md's error kinds (src/core/error.h),
# and error.h's list of the kinds providers state in their folders.
# `make generated` (alias `make docs`) rewrites
# them in place (between BEGIN/END generated markers);
# spec/generated_spec.lua fails when the checked-in text is stale.

# Every Lua module of the tree: lua/sandkit/ and the provider folders
# (installed as sandkit.providers.<dir>[.<name>]).
LUA_MODULES := $(sort $(wildcard lua/sandkit/*.lua lua/sandkit/*/*.lua src/core/providers/*/*.lua))
ROCKSPECS := $(sort $(wildcard rockspec/*.rockspec))
GENERATE_LISTS = $(ROCKSPECS) -- $(CORE_SRC) $(LUA_SRC) -- $(LUA_MODULES)

.PHONY: generated generated-lists
# error.h first, from the tree alone: the core it describes is built from it.
generated:
	@$(LUA) tools/generate.lua kinds
	@$(MAKE) --no-print-directory build/sandkit/core.so
	@LUA_CPATH='build/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' $(LUA) tools/generate.lua write $(GENERATE_LISTS)

# The lists, as tools/generate.lua takes them (for spec/generated_spec.lua).
generated-lists:
	@echo $(GENERATE_LISTS)
