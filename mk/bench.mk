# Benchmarks. Not part of `make test`: `make bench` builds the C
# baselines into build/bench/ and prints the table (bench/README.md).
# `bench-build` is also a test prerequisite, for spec/bench_smoke_spec.lua.

BENCH_FLOORS := floor_spawn floor_fanout floor_reader floor_bwrap floor_fleet floor_docker
BENCH_BINS := $(addprefix build/bench/,$(BENCH_FLOORS)) build/bench/floor_platform build/bench/benchclock.so
BENCH_CC ?= $(CC)
BENCH_CFLAGS := -std=c11 -O2 -Wall -Wextra -Werror
BENCH_LUA_CFLAGS := $(shell pkg-config --cflags lua5.4 2>/dev/null)
BENCH_ENV = LUA_CPATH='$(LUA_BUILD)/?.so;$(LUA_BUILD)/bench/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;'

build/bench/floor_%: bench/floor_%.c bench/floor.h
	@mkdir -p build/bench
	$(BENCH_CC) $(BENCH_CFLAGS) -o $@ $<

build/bench/benchclock.so: bench/benchclock.c
	@mkdir -p build/bench
	$(BENCH_CC) $(BENCH_CFLAGS) -fPIC -shared $(BENCH_LUA_CFLAGS) -o $@ $<

# The clock module for another interpreter (make bench LUA=luajit, mk/lua.mk).
build-%/bench/benchclock.so: bench/benchclock.c
	@mkdir -p $(dir $@)
	$(BENCH_CC) $(BENCH_CFLAGS) -fPIC -shared $(LUA_CFLAGS_$*) -o $@ $<

# The Platform baseline links libwebsockets, which the floor_% rule above
# does not; an explicit rule wins over that pattern.
build/bench/floor_platform: bench/floor_platform.c bench/floor.h
	@mkdir -p build/bench
	$(BENCH_CC) $(BENCH_CFLAGS) $(shell pkg-config --cflags libwebsockets) -o $@ $< \
	  $(shell pkg-config --libs libwebsockets)

.PHONY: bench bench-build bench-quick bench-peer bench-scale
bench-build: $(BENCH_BINS)

# The peer rows run Mastra's own LocalSandbox (@mastra/core, pinned in
# bench/peer/package-lock.json) under Node: npm ci once.
bench-peer: bench/peer/node_modules/@mastra/core/package.json

bench/peer/node_modules/@mastra/core/package.json: bench/peer/package-lock.json
	cd bench/peer && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# BENCH_ARGS passes options through, e.g. make bench BENCH_ARGS='--only exec'.
# npm-deps: the platform and modal rows start the reference servers (and
# the official modal SDK as a baseline); bench-peer: Mastra LocalSandbox.
bench: all bench-build $(LUA_BUILD)/bench/benchclock.so bench-peer npm-deps
	@$(BENCH_ENV) $(LUA) bench/run.lua $(BENCH_ARGS)

bench-quick: all bench-build $(LUA_BUILD)/bench/benchclock.so bench-peer npm-deps
	@$(BENCH_ENV) $(LUA) bench/run.lua --quick $(BENCH_ARGS)

# Cost as work grows (bench/scale.lua): make bench-scale [BENCH_ARGS='--only scale_local']
bench-scale: all bench-build $(LUA_BUILD)/bench/benchclock.so npm-deps
	@$(BENCH_ENV) $(LUA) bench/run.lua --scale $(BENCH_ARGS)

TEST_PREP += bench-build bench-peer

# This fragment must not become the default goal.
