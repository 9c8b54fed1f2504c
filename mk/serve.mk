# Try the remote providers offline (README.md §"Try it offline"): each
# target runs a reference server (or the emulated Apple container CLI) in
# the foreground and prints the variables to export; Ctrl-C stops it.
# PORT=N picks the port (default: any free one).
.PHONY: serve-platform serve-modal serve-container
serve-platform serve-modal: deps
	@$(MAKE) --no-print-directory npm-deps
	@sh spec/servers/serve.sh $(@:serve-%=%) $(or $(PORT),0)
serve-container: deps
	@sh spec/servers/serve.sh container
