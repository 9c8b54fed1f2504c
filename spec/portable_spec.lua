-- macOS and other non-Linux systems (issue 12, item 15): every Linux-only
-- interface the core uses goes through src/core/compat.c, and the fallbacks
-- (-DSK_PORTABLE, what `make test-portable` runs the suite with) use none of
-- them. Compiles one file: cheap enough for every run.
local sh = require "helpers.sh"
local q, run = sh.quote, sh.run

-- Linux-only (or glibc-only) symbols and constants, as they appear in C.
local LINUX_ONLY = {
  "pidfd_open", "getrandom", "pipe2", "F_SETPIPE_SZ", "prctl", "/proc/",
  "posix_spawn_file_actions_addclosefrom_np", "posix_spawn_file_actions_addchdir_np",
  "SYS_", "sys/syscall.h", "sys/random.h", "P_PIDFD", "extern char **environ",
  -- the confined file access of fs_local.c (issue 13)
  "openat2", "linux/", "RESOLVE_BENEATH", "O_PATH", "renameat2", "RENAME_NOREPLACE",
  "copy_file_range", "setfsuid", "setfsgid",
  -- getxattr has another signature on macOS
  "getxattr", "sys/xattr.h",
}

describe("portability (compat.h)", function()
  it("keeps Linux-only interfaces out of every C file but compat.c", function()
    local offenders = {}
    local p = assert(io.popen("find src -name '*.c' -o -name '*.h' | sort"))
    for path in p:lines() do
      if not path:match("/compat%.[ch]$") then
        local f = assert(io.open(path))
        local n = 0
        local in_comment = false
        for line in f:lines() do
          n = n + 1
          -- comments may name the interfaces (they explain the fallbacks),
          -- block comments over several lines included
          local code, pos = {}, 1
          while pos <= #line do
            if in_comment then
              local e = line:find("*/", pos, true)
              if not e then break end
              in_comment, pos = false, e + 2
            else
              local b = line:find("/*", pos, true)
              local l = line:find("//", pos, true)
              if l and (not b or l < b) then
                code[#code + 1] = line:sub(pos, l - 1)
                break
              end
              code[#code + 1] = line:sub(pos, b and b - 1 or -1)
              if not b then break end
              in_comment, pos = true, b + 2
            end
          end
          code = table.concat(code, " ")
          for _, name in ipairs(LINUX_ONLY) do
            -- whole identifiers only (sk_pidfd_open is the wrapper)
            local pat = name:gsub("%p", "%%%0")
            if name:match("^[%w_]") then pat = "%f[%w_]" .. pat end
            if name:match("[%w_]$") and not name:match("_$") then pat = pat .. "%f[^%w_]" end
            -- bwrap's --proc /proc is a mount inside the sandbox, cgroup.c
            -- finds the cgroup file systems there (Linux only anyway;
            -- SK_HAVE_CGROUP), the local provider names descriptors by
            -- /proc/self/fd (for bwrap, Linux only) and local_host.c lists a
            -- process group there
            -- (without /proc it lists nothing: destroy then waits for the
            -- group's leader only)
            if code:find(pat) and not (name == "/proc/" and (path:match("/providers/local/") or path:match("cgroup%.c$"))) then
              offenders[#offenders + 1] = ("%s:%d uses %s"):format(path, n, name)
            end
          end
        end
        f:close()
      end
    end
    p:close()
    assert.are.same({}, offenders)
  end)

  it("compiles compat.c with every fallback forced and links none of them", function()
    local tmp = os.tmpname()
    local obj = tmp .. ".o"
    local cc = os.getenv("CC") or "cc"
    -- keyrings and per-thread file-system ids stay on under SK_PORTABLE on
    -- Linux (compat.h: isolation, not interfaces); off here as on any
    -- system that is not Linux
    local code, out = run(cc .. " -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -DSK_PORTABLE -DSK_HAVE_KEYRINGS=0"
      .. " -DSK_HAVE_FSUID=0 -c src/core/compat.c -o " .. q(obj))
    assert.are.equal(0, code, out)
    local _, syms = run("nm -u " .. q(obj))
    os.remove(obj)
    os.remove(tmp)
    for _, name in ipairs({ "pidfd", "getrandom", "pipe2", "addclosefrom", "addchdir", "syscall", "prctl",
                            "renameat2", "copy_file_range" }) do
      assert.is_falsy(syms:find(name, 1, true), name .. " in the portable compat.o:\n" .. syms)
    end
    -- and the native build does use them (so the check above can fail)
    code, out = run(cc .. " -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -c src/core/compat.c -o " .. q(obj))
    assert.are.equal(0, code, out)
    _, syms = run("nm -u " .. q(obj))
    os.remove(obj)
    if io.open("/proc/self/stat") then -- Linux with glibc >= 2.34, as Debian 12
      assert.is_truthy(syms:find("pidfd", 1, true) or syms:find("syscall", 1, true), syms)
      assert.is_truthy(syms:find("addclosefrom", 1, true), syms)
    end
  end)

  it("runs a command in a cwd and keeps OLDPWD as the child's environment has it", function()
    -- the same in native and portable builds (the portable one goes through sh)
    local sandkit = require "sandkit"
    local dir = os.tmpname()
    os.remove(dir)
    local sb = sandkit.LocalSandbox { working_directory = dir }
    assert(sb:start())
    assert(sb:exec("mkdir -p sub"))
    local r = assert(sb:exec("pwd; echo ${OLDPWD-unset}", nil, { cwd = "sub" }))
    assert.are.equal(dir .. "/sub\nunset\n", r.stdout)
    r = assert(sb:exec("echo \"$OLDPWD\"", nil, { cwd = "sub", env = { OLDPWD = "/x y" } }))
    assert.are.equal("/x y\n", r.stdout)
    sb:destroy()
    os.execute("rm -rf " .. q(dir))
  end)
end)
