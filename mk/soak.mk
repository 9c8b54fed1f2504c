# The soak at full scale: `make test` runs spec/soak_spec.lua with
# 2,000 operations; `make soak` runs it alone with SOAK_N (default 10,000)
# and prints the before/after descriptors, children and RSS.


SOAK_N ?= 10000

.PHONY: soak
soak: deps
	@$(MAKE) --no-print-directory all
	@SANDKIT_SOAK_N=$(SOAK_N) LUA_CPATH='$(CURDIR)/build/?.so;;' \
	  LUA_PATH='$(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;$(CURDIR)/spec/?.lua;;' \
	  $(LUA) /usr/bin/busted --cpath='$(CURDIR)/build/?.so' spec/soak_spec.lua

