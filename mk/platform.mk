# PlatformSandbox (issue 3). The benchmark baseline of the platform rows
# links libwebsockets, which the generic floor_% rule of bench.mk does not;
# this explicit rule wins over that pattern. The C test spec/c/platform_test.c
# and the specs start spec/servers/platform themselves (npm ci: npm-deps).

platform_saved_goal := $(.DEFAULT_GOAL)

build/bench/floor_platform: bench/floor_platform.c bench/floor.h
	@mkdir -p build/bench
	$(BENCH_CC) $(BENCH_CFLAGS) $(shell pkg-config --cflags libwebsockets) -o $@ $< \
	  $(shell pkg-config --libs libwebsockets)

bench-build: build/bench/floor_platform

.DEFAULT_GOAL := $(platform_saved_goal)
