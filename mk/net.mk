# Network transports (src/core/http.c, ws.c): the C tests include the echo
# server's C harness, so they rebuild when it changes. They start
# spec/servers/echo/server.mjs themselves (its npm ci is done by npm-deps).
build/test/http_test build/test/ws_test: spec/servers/echo/harness.h
