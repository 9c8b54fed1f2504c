# Release packaging. The version is written once, in
# lua/sandkit/version.lua; the release rockspec is
# rockspec/sandkit-$(VERSION)-1.rockspec.
#   make dist   $(DIST_DIR)/sandkit-$(VERSION).tar.gz (git archive of
#               DIST_REF, default HEAD, plus build/gen/modal_pb.h generated
#               from its modal.proto: the rock's builtin build runs no
#               generator), the rockspec beside it with
#               source.url = DIST_URL (default: the tarball's file://
#               address; set the published address when releasing), and
#               sandkit-$(VERSION)-1.src.rock (`luarocks pack` of it: the
#               rockspec plus the tarball), which `luarocks install` builds
#               anywhere, offline.


# git archive; luarocks pack zips, spec/rock_spec.lua lists the .src.rock
DEB_PACKAGES += git zip unzip

VERSION := $(shell sed -n 's/^return "\(.*\)"$$/\1/p' lua/sandkit/version.lua)
DIST_DIR ?= build/dist
DIST_REF ?= HEAD
DIST_ROCKSPEC := rockspec/sandkit-$(VERSION)-1.rockspec
DIST_URL ?= file://$(abspath $(DIST_DIR))/sandkit-$(VERSION).tar.gz

.PHONY: dist
dist:
	@test -n "$(VERSION)" || { echo "no version in lua/sandkit/version.lua"; exit 1; }
	@test -f $(DIST_ROCKSPEC) || { echo "$(DIST_ROCKSPEC) is missing (lua/sandkit/version.lua says $(VERSION))"; exit 1; }
	@mkdir -p $(DIST_DIR)/gen
	git show $(DIST_REF):src/core/providers/modal/third_party/modal.proto > $(DIST_DIR)/gen/modal.proto
	git show $(DIST_REF):tools/modal_gen.lua > $(DIST_DIR)/gen/modal_gen.lua
	$(LUA) $(DIST_DIR)/gen/modal_gen.lua $(DIST_DIR)/gen/modal.proto $(DIST_DIR)/gen/modal_pb.h
	git archive --format=tar.gz -o $(DIST_DIR)/sandkit-$(VERSION).tar.gz \
	  --prefix=sandkit-$(VERSION)/build/gen/ --add-file=$(DIST_DIR)/gen/modal_pb.h \
	  --prefix=sandkit-$(VERSION)/ $(DIST_REF)
	sed 's|^  url = ".*",$$|  url = "$(DIST_URL)",|' $(DIST_ROCKSPEC) > $(DIST_DIR)/sandkit-$(VERSION)-1.rockspec
	cd $(DIST_DIR) && rm -f sandkit-$(VERSION)-1.src.rock && luarocks --lua-version=5.4 pack sandkit-$(VERSION)-1.rockspec

