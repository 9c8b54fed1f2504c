-- sandkit: run commands in sandboxes from Lua (C core on one libuv loop).
-- Build and install from the project root (`make rock` does both):
--   make build/gen/modal_pb.h    # Modal's tables, generated from modal.proto
--   luarocks --lua-version=5.4 make --deps-mode=none rockspec/sandkit-scm-1.rockspec
-- (--lua-version=5.1 for Lua 5.1 and LuaJIT, 5.3 for 5.3: `make rock LUA=luajit`)
-- The sources and modules are listed one by one (a rockspec cannot glob):
-- `make generated` writes the lists from the Makefile's, and
-- spec/generated_spec.lua fails when they are stale.
-- The builtin backend takes no compiler flags: for a core.so that exports
-- luaopen_sandkit_core alone (as the Makefile's build does), add
-- -fvisibility=hidden to CFLAGS on the luarocks command line.
rockspec_format = "3.0"
package = "sandkit"
version = "scm-1"

source = {
  url = "git+file://.",
}

description = {
  summary = "Run commands in sandboxes (local, bubblewrap, containers, cloud) from Lua",
  detailed = [[
sandkit is a Lua module (5.4, 5.3, 5.1 and LuaJIT 2.1) with a C core (libuv,
libcurl, libwebsockets, jansson) that runs commands in sandboxes, one at a
time or as a fleet, from plain scripts, coroutine tasks or a host program's
event loop.
It installs the `sandkit` command-line tool as well.]],
  license = "MIT",
}

dependencies = {
  "lua >= 5.1, < 5.5", -- 5.1 covers LuaJIT 2.1
}

-- Linux: only the libraries are checked (Debian keeps curl's headers under
-- the multiarch include directory, which the compiler searches by itself).
-- macOS: the Homebrew packages libuv jansson libwebsockets openssl@3
-- libarchive (libwebsockets' headers include OpenSSL's, and the core links
-- libcrypto for SHA-256; libarchive: DockerSandbox's tar); curl is the
-- system's. Homebrew's prefix (/opt/homebrew on
-- Apple silicon, /usr/local on Intel) is given as e.g. LIBUV_DIR=$(brew --prefix libuv); see README.
external_dependencies = {
  LIBUV = { library = "uv" },
  LIBCURL = { library = "curl" },
  JANSSON = { library = "jansson" },
  LIBWEBSOCKETS = { library = "websockets" },
  OPENSSL = { library = "crypto" },
  LIBARCHIVE = { library = "archive" },
  platforms = {
    linux = {
      LIBUV = { header = "uv.h", library = "uv" },
      JANSSON = { header = "jansson.h", library = "jansson" },
      LIBWEBSOCKETS = { header = "libwebsockets.h", library = "websockets" },
      OPENSSL = { header = "openssl/evp.h", library = "crypto" },
      LIBARCHIVE = { header = "archive.h", library = "archive" },
    },
    macosx = {
      LIBUV = { header = "uv.h", library = "uv" },
      LIBCURL = { header = "curl/curl.h", library = "curl" },
      JANSSON = { header = "jansson.h", library = "jansson" },
      LIBWEBSOCKETS = { header = "libwebsockets.h", library = "websockets" },
      OPENSSL = { header = "openssl/evp.h", library = "crypto" },
      LIBARCHIVE = { header = "archive.h", library = "archive" },
    },
  },
}

-- Compiler flags: the builtin back-end takes them from the luarocks
-- configuration only (a rockspec has no `variables` field; luarocks rejects
-- one), so the C11 flags are given on the command line:
--   luarocks --lua-version=5.4 make --deps-mode=none rockspec/sandkit-scm-1.rockspec \
--     CFLAGS="-O2 -fPIC -std=c11 -fvisibility=hidden"
-- `defines` below adds -D_GNU_SOURCE either way. Without CFLAGS the core
-- still builds (luarocks' default "-O2 -fPIC", gcc's gnu17 dialect).

build = {
  type = "builtin",
  modules = {
    ["sandkit.core"] = {
      sources = {
        -- BEGIN generated: sources (make generated: the Makefile's CORE_SRC and LUA_SRC)
        "src/core/buf.c",
        "src/core/cgroup.c",
        "src/core/child.c",
        "src/core/compat.c",
        "src/core/error.c",
        "src/core/fs_local.c",
        "src/core/grpc.c",
        "src/core/grpc_frame.c",
        "src/core/http.c",
        "src/core/log.c",
        "src/core/loop.c",
        "src/core/proc.c",
        "src/core/providers/apple_container/apple_container.c",
        "src/core/providers/apple_container/apple_container_cli.c",
        "src/core/providers/apple_container/apple_container_config.c",
        "src/core/providers/apple_container/apple_container_shell.c",
        "src/core/providers/docker/docker.c",
        "src/core/providers/docker/docker_api.c",
        "src/core/providers/docker/docker_archive.c",
        "src/core/providers/docker/docker_call.c",
        "src/core/providers/docker/docker_config.c",
        "src/core/providers/docker/docker_conn.c",
        "src/core/providers/docker/docker_exec.c",
        "src/core/providers/docker/docker_frame.c",
        "src/core/providers/docker/docker_fs.c",
        "src/core/providers/docker/docker_methods.c",
        "src/core/providers/docker/docker_ports.c",
        "src/core/providers/local/local.c",
        "src/core/providers/local/local_host.c",
        "src/core/providers/local/local_pin.c",
        "src/core/providers/modal/modal.c",
        "src/core/providers/modal/modal_client.c",
        "src/core/providers/modal/modal_config.c",
        "src/core/providers/modal/modal_exec.c",
        "src/core/providers/modal/modal_fs.c",
        "src/core/providers/modal/modal_msg.c",
        "src/core/providers/modal/pb.c",
        "src/core/providers/modal/toml.c",
        "src/core/providers/platform/platform.c",
        "src/core/providers/platform/platform_api.c",
        "src/core/providers/platform/platform_exec.c",
        "src/core/providers/platform/platform_fs.c",
        "src/core/providers/registry.c",
        "src/core/sandbox.c",
        "src/core/secrets.c",
        "src/core/shell.c",
        "src/core/ws.c",
        "src/lua/buffer_ud.c",
        "src/lua/core.c",
        "src/lua/fs_ud.c",
        "src/lua/ops_ud.c",
        "src/lua/process_ud.c",
        "src/lua/sandbox_ud.c",
        -- END generated: sources
      },
      defines = { "_GNU_SOURCE" },
      incdirs = {
        "src/core", "src/lua", "build/gen",
        "$(LIBUV_INCDIR)", "$(LIBCURL_INCDIR)", "$(JANSSON_INCDIR)",
        "$(LIBWEBSOCKETS_INCDIR)", "$(OPENSSL_INCDIR)", "$(LIBARCHIVE_INCDIR)",
        -- compat-5.3.h for 5.1 and LuaJIT (lua-compat53-dev; Debian keeps it
        -- with the Lua 5.1 headers, searched after LuaJIT's own)
        "$(LUA_INCDIR)/../lua5.1",
      },
      libdirs = {
        "$(LIBUV_LIBDIR)", "$(LIBCURL_LIBDIR)", "$(JANSSON_LIBDIR)",
        "$(LIBWEBSOCKETS_LIBDIR)", "$(OPENSSL_LIBDIR)", "$(LIBARCHIVE_LIBDIR)",
      },
      libraries = { "uv", "curl", "jansson", "websockets", "crypto", "archive", "m" },
    },
    -- BEGIN generated: modules (make generated: the Makefile's LUA_MODULES, tools/generate.lua names them)
    ["sandkit"] = "lua/sandkit/init.lua",
    ["sandkit.cli"] = "lua/sandkit/cli.lua",
    ["sandkit.cli_cp"] = "lua/sandkit/cli_cp.lua",
    ["sandkit.compat"] = "lua/sandkit/compat.lua",
    ["sandkit.errors"] = "lua/sandkit/errors.lua",
    ["sandkit.fleet"] = "lua/sandkit/fleet.lua",
    ["sandkit.fs"] = "lua/sandkit/fs/init.lua",
    ["sandkit.fs.errors"] = "lua/sandkit/fs/errors.lua",
    ["sandkit.fs.exec"] = "lua/sandkit/fs/exec.lua",
    ["sandkit.fs.json"] = "lua/sandkit/fs/json.lua",
    ["sandkit.fs.local"] = "lua/sandkit/fs/local.lua",
    ["sandkit.fs.path"] = "lua/sandkit/fs/path.lua",
    ["sandkit.ops"] = "lua/sandkit/ops.lua",
    ["sandkit.options"] = "lua/sandkit/options.lua",
    ["sandkit.providers.apple_container"] = "src/core/providers/apple_container/provider.lua",
    ["sandkit.providers.docker"] = "src/core/providers/docker/provider.lua",
    ["sandkit.providers.docker.fs"] = "src/core/providers/docker/fs.lua",
    ["sandkit.providers.docker.methods"] = "src/core/providers/docker/methods.lua",
    ["sandkit.providers.local"] = "src/core/providers/local/provider.lua",
    ["sandkit.providers.local.fs"] = "src/core/providers/local/fs.lua",
    ["sandkit.providers.modal"] = "src/core/providers/modal/provider.lua",
    ["sandkit.providers.modal.fs"] = "src/core/providers/modal/fs.lua",
    ["sandkit.providers.platform"] = "src/core/providers/platform/provider.lua",
    ["sandkit.providers.platform.fs"] = "src/core/providers/platform/fs.lua",
    ["sandkit.registry"] = "lua/sandkit/registry.lua",
    ["sandkit.sandbox"] = "lua/sandkit/sandbox.lua",
    ["sandkit.scheduler"] = "lua/sandkit/scheduler.lua",
    ["sandkit.version"] = "lua/sandkit/version.lua",
    -- END generated: modules
  },
  install = {
    bin = { sandkit = "bin/sandkit" },
  },
  copy_directories = { "docs", "examples" },
}
