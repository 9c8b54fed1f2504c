-- The sandkit command-line tool (bin/sandkit, lua/sandkit/cli.lua), run as
-- a separate process against the in-tree build, plus its argument parser
-- and summary formatter directly; and the examples, which must run and
-- exit 0.
local cli = require "sandkit.cli"

local child = require "helpers.child"
local sh = require "helpers.sh"

local q = sh.quote
local capture = sh.capture
local ROOT, ENV = child.ROOT, child.LUA_ENV
local BIN = ROOT .. "/bin/sandkit"

local mktemp = require("helpers.tmp").mktemp

local scratch -- TMPDIR of every run: the tool's temporary directories go here

local slurp = require("helpers.files").must_read

-- Runs `sandkit <args>` (a list, each quoted) with an optional variable
-- assignment prefix (e.g. "VAR=x") and stdin text (default: empty);
-- returns exit code, stdout, stderr.
local function sandkit(args, prefix, input)
  local words = {}
  for i, a in ipairs(args) do words[i] = q(a) end
  local err_file, in_file = scratch .. "/stderr", scratch .. "/stdin"
  local f = assert(io.open(in_file, "wb"))
  f:write(input or "")
  f:close()
  local cmd = ("cd %s && env %s TMPDIR=%s %s timeout -k 5 120 %s %s %s <%s 2>%s"):format(
    q(scratch), ENV, q(scratch .. "/tmp"), prefix or "", child.LUA, q(BIN), table.concat(words, " "), q(in_file), q(err_file))
  local out, code = capture(cmd)
  return code, out, slurp(err_file)
end

local function leftovers()
  return capture("ls -A " .. q(scratch .. "/tmp"))
end

describe("sandkit CLI", function()
  setup(function()
    scratch = mktemp()
    -- searchable: run by root, bwrap commands run as nobody, who must be
    -- able to reach the working directory made under TMPDIR
    assert(os.execute("chmod 755 " .. q(scratch) .. " && mkdir -p " .. q(scratch .. "/tmp")))
  end)
  teardown(function()
    if scratch then os.execute("rm -rf " .. q(scratch)) end
  end)

  describe("exec", function()
    it("runs a command and exits 0 with its output", function()
      local code, out, err = sandkit { "exec", "--", "echo", "hi" }
      assert.are.equal(0, code, err)
      assert.are.equal("hi\n", out)
      assert.are.equal("", err)
      assert.are.equal("", leftovers()) -- its temporary working directory is gone
    end)

    it("propagates exit codes: 3, 124 on timeout, 137 on SIGKILL, 143 on SIGTERM", function()
      assert.are.equal(3, (sandkit { "exec", "--", "exit 3" }))
      local code, _, err = sandkit { "exec", "--timeout", "200", "--", "sleep", "30" }
      assert.are.equal(124, code)
      assert.are.equal("sandkit: the command timed out after 200 ms (exit 124)\n", err)
      assert.are.equal(137, (sandkit { "exec", "--", "kill -9 $$" }))
      assert.are.equal(143, (sandkit { "exec", "--", "kill -TERM $$" }))
    end)

    it("says a timeout on a line of its own, after the command's last stderr line", function()
      local code, out, err = sandkit { "exec", "--timeout", "500", "--", "echo out; printf 'no newline' >&2; exec sleep 30" }
      assert.are.equal(124, code)
      assert.are.equal("out\n", out)
      assert.are.equal("no newline\nsandkit: the command timed out after 500 ms (exit 124)\n", err)
    end)

    it("--timeout 0 is no timeout, as the timeout option's 0", function()
      local code, out, err = sandkit { "exec", "--timeout", "0", "--", "sleep 0.2; echo done" }
      assert.are.equal(0, code, err)
      assert.are.equal("done\n", out)
      assert.are.equal(0, cli.parse({ "fleet", "2", "--timeout=0", "--", "true" }, os.getenv).timeout)
    end)

    it("passes stdout and stderr to its own", function()
      local code, out, err = sandkit { "exec", "--", "echo out; echo err >&2" }
      assert.are.equal(0, code)
      assert.are.equal("out\n", out)
      assert.are.equal("err\n", err)
    end)

    it("streams output as it arrives", function()
      -- The command prints a line, then waits (bounded) for a file that the
      -- test creates only after reading that line from the pipe.
      local ws = scratch .. "/stream"
      local cmd = ("cd %s && env %s %s %s exec --workdir %s -- %s"):format(q(scratch), ENV, child.LUA, q(BIN), q(ws),
        q("echo first; i=0; while [ ! -e go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; " ..
          "[ -e go ] && echo second-after-go || echo second-no-go"))
      local p = sh.popen(cmd)
      assert.are.equal("first", p:read("*l"))
      assert(io.open(ws .. "/go", "w")):close()
      local second = p:read("*l")
      local _, _, code = p:close()
      assert.are.equal("second-after-go", second)
      assert.are.equal(0, code)
    end)

    it("delivers arguments with spaces, quotes and shell characters intact", function()
      local args = { "a b", "it's", '"dq"', "$HOME", "", "x;y", "*", "back\\slash", "tab\there", "line\nbreak" }
      local argv = { "exec", "--", "printf", "<%s>\\n" }
      for _, a in ipairs(args) do argv[#argv + 1] = a end
      local code, out = sandkit(argv)
      assert.are.equal(0, code)
      local expected = {}
      for _, a in ipairs(args) do expected[#expected + 1] = "<" .. a .. ">\n" end
      assert.are.equal(table.concat(expected), out)
    end)

    it("treats CMD as a shell string", function()
      local code, out = sandkit { "exec", "--", "printf 'a\\nb\\nc\\n' | wc -l" }
      assert.are.equal(0, code)
      assert.are.equal("3", out:match("%d+"))
    end)

    it("honours --cwd and --workdir", function()
      local ws = scratch .. "/ws-cwd"
      assert(os.execute("mkdir -p " .. q(ws .. "/sub")))
      local code, out = sandkit { "exec", "--workdir", ws, "--cwd", "sub", "--", "pwd" }
      assert.are.equal(0, code)
      assert.are.equal(ws .. "/sub\n", out)
    end)

    it("feeds --stdin to the command", function()
      local code, out = sandkit({ "exec", "--stdin", "--", "tr a-z A-Z" }, nil, "hello\nworld\n")
      assert.are.equal(0, code)
      assert.are.equal("HELLO\nWORLD\n", out)
      code, out = sandkit({ "exec", "--", "wc -c" }, nil, "not passed without --stdin")
      assert.are.equal(0, code)
      assert.are.equal("0", out:match("%d+"))
    end)

    it("passes --env values to the command and never prints them", function()
      local code, out, err = sandkit { "exec", "--env", "SECRET=s3cr3t-value", "--env", "OTHER=two words",
        "--", 'test "$SECRET" = s3cr3t-value && test "$OTHER" = "two words" && echo match' }
      assert.are.equal(0, code, err)
      assert.are.equal("match\n", out)
      assert.is_nil(err:find("s3cr3t", 1, true))
    end)

    it("copies --env NAME from its own environment", function()
      local code, out = sandkit({ "exec", "--env", "SANDKIT_CLI_TOKEN", "--", 'echo "$SANDKIT_CLI_TOKEN"' },
        "SANDKIT_CLI_TOKEN=from-env")
      assert.are.equal(0, code)
      assert.are.equal("from-env\n", out)
    end)

    it("keeps --env values out of error messages", function()
      local code, out, err = sandkit { "exec", "--env", "SECRET=s3cr3t-value", "--bogus", "--", "true" }
      assert.are.equal(2, code)
      assert.is_truthy(err:find("--bogus", 1, true), err)
      assert.is_nil((out .. err):find("s3cr3t", 1, true))
      -- a value given without its name, and not an environment variable
      code, out, err = sandkit { "exec", "--env", "s3cr3t=", "--env", "hunter2-secret", "--", "true" }
      assert.are.equal(2, code)
      assert.is_truthy(err:find("--env", 1, true), err)
      assert.is_nil((out .. err):find("hunter2", 1, true))
      code, out, err = sandkit { "exec", "--env", "=s3cr3t-value", "--", "true" }
      assert.are.equal(2, code)
      assert.is_nil((out .. err):find("s3cr3t", 1, true))
    end)

    it("exits 2 with a message naming the flag for bad flags", function()
      local cases = {
        { { "exec", "--bogus", "--", "true" }, "--bogus" },
        { { "exec", "-x", "true" }, "-x" },
        { { "exec", "--timeout", "abc", "--", "true" }, "--timeout" },
        { { "exec", "--timeout", "-5", "--", "true" }, "--timeout" },
        { { "exec", "--timeout" }, "--timeout" },
        { { "exec", "--isolation", "docker", "--", "true" }, "--isolation" },
        { { "exec", "--stdin=yes", "--", "true" }, "--stdin" },
        { { "exec", "--cwd", "a", "--cwd", "b", "--", "true" }, "--cwd" },
        { { "exec", "--provider", "platform", "--isolation", "bwrap", "--", "true" }, "--isolation" },
        { { "exec" }, "command" },
        { { "frobnicate" }, "frobnicate" },
        { { "--frobnicate" }, "--frobnicate" },
        { { "fleet", "--", "true" }, "N" },
        { { "fleet", "0", "--", "true" }, "N" },
        { { "fleet", "2", "--concurrency", "0", "--", "true" }, "--concurrency" },
        { { "fleet", "2", "--stdin", "--", "true" }, "--stdin" },
      }
      for _, c in ipairs(cases) do
        local code, out, err = sandkit(c[1])
        local what = table.concat(c[1], " ")
        assert.are.equal(2, code, what)
        assert.are.equal("", out, what)
        assert.is_truthy(err:find(c[2], 1, true), what .. " -> " .. err)
      end
    end)

    it("--timeout errors name the unit, milliseconds, like the timeout option's", function()
      for _, argv in ipairs {
        { "exec", "--timeout", "abc", "--", "true" },
        { "exec", "--timeout", "-5", "--", "true" },
        { "exec", "--timeout", "1.5", "--", "true" },
        { "exec", "--timeout=", "--", "true" },
        { "exec", "--timeout", "99999999999999999999", "--", "true" },
        { "exec", "--timeout" },
        { "fleet", "2", "--timeout", "2s", "--", "true" },
      } do
        local code, out, err = sandkit(argv)
        local what = table.concat(argv, " ")
        assert.are.equal(2, code, what)
        assert.are.equal("", out, what)
        assert.is_truthy(err:find("--timeout expects a whole number of milliseconds", 1, true), what .. " -> " .. err)
      end
    end)

    it("runs under bubblewrap with --isolation bwrap", function()
      if not sh.have_bwrap() then
        pending("bubblewrap cannot run here")
        return
      end
      local code, out, err = sandkit { "exec", "--isolation", "bwrap", "--",
        "echo data > f && cat f && touch /usr/sandkit-cli-probe 2>/dev/null; echo usr=$?" }
      assert.are.equal(0, code, err)
      assert.are.equal("data\nusr=1\n", out)
    end)

    it("exits 125 when the command cannot be run", function()
      local code, out, err = sandkit { "exec", "--cwd", "/nonexistent-dir-for-sandkit", "--", "true" }
      assert.are.equal(125, code)
      assert.are.equal("", out)
      assert.is_truthy(err:find("^sandkit: "), err)
    end)

    it("exits 130 when interrupted, leaving no process behind", function()
      local ws = scratch .. "/ws-int"
      local marker = ("sleep 60.%06d"):format(math.random(0, 999999)) -- unique in the process table
      local script = ([[
        %s %s %s exec --workdir %s -- %s &
        pid=$!
        i=0; while [ ! -e %s ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
        kill -INT $pid; wait $pid; echo "rc=$?"
        pgrep -f %s >/dev/null && echo leftover || echo clean
      ]]):format(ENV, child.LUA, q(BIN), q(ws), q("touch started; exec " .. marker), q(ws .. "/started"),
        q("^" .. marker:gsub("%.", "\\.") .. "$"))
      local out = capture("sh -c " .. q(script))
      assert.are.equal("rc=130\nclean\n", out)
    end)
  end)

  describe("fleet", function()
    local function rows(out)
      local r = {}
      for line in out:gmatch("[^\n]+") do
        local i, exit = line:match("^%s*(%d+)%s+(%-?%w+)%s+[%d.]+%s%s")
        if i then r[#r + 1] = { index = tonumber(i), exit = exit, line = line } end
      end
      return r
    end

    it("runs N sandboxes and prints a summary with N rows, exit 0", function()
      local code, out, err = sandkit { "fleet", "5", "--", 'echo "sandbox $SANDKIT_INDEX of $SANDKIT_FLEET_SIZE"; pwd' }
      assert.are.equal(0, code, err)
      local r = rows(out)
      assert.are.equal(5, #r, out)
      for i, row in ipairs(r) do
        assert.are.equal(i, row.index)
        assert.are.equal("0", row.exit)
        assert.is_truthy(row.line:find(("sandbox %d of 5"):format(i), 1, true), row.line)
      end
      assert.is_truthy(out:find("5 sandboxes: 5 ok, 0 failed", 1, true), out)
      assert.is_truthy(out:find("min [%d.]+, median [%d.]+, max [%d.]+"), out)
      assert.is_nil(out:find("\r", 1, true)) -- no progress line when stdout is not a terminal
      assert.are.equal("", leftovers()) -- the working directories are gone
    end)

    it("gives each sandbox its own working directory", function()
      local base = scratch .. "/fleet-base"
      local code, out = sandkit { "fleet", "3", "--workdir", base, "--", "echo $SANDKIT_INDEX > mine; ls | wc -l" }
      assert.are.equal(0, code, out)
      for i = 1, 3 do assert.are.equal(i .. "\n", slurp(("%s/%d/mine"):format(base, i))) end
      for _, row in ipairs(rows(out)) do assert.is_truthy(row.line:find("%s1$"), row.line) end
    end)

    it("exits 1 when any command fails, and shows which", function()
      local code, out = sandkit { "fleet", "4", "--concurrency", "2", "--", "[ $SANDKIT_INDEX -ne 3 ] || exit 9" }
      assert.are.equal(1, code)
      local r = rows(out)
      assert.are.equal(4, #r)
      assert.are.same({ "0", "0", "9", "0" }, { r[1].exit, r[2].exit, r[3].exit, r[4].exit })
      assert.is_truthy(out:find("4 sandboxes: 3 ok, 1 failed", 1, true), out)
    end)

    it("reports timeouts", function()
      local code, out = sandkit { "fleet", "2", "--timeout", "200", "--", "sleep 30" }
      assert.are.equal(1, code)
      local r = rows(out)
      assert.are.same({ "124", "124" }, { r[1].exit, r[2].exit })
      assert.is_truthy(out:find("(2 timed out)", 1, true), out)
    end)

    it("masks --env values in the summary", function()
      local code, out, err = sandkit { "fleet", "2", "--env", "TOKEN=tok-abc123", "--", 'echo "token is $TOKEN"' }
      assert.are.equal(0, code)
      assert.is_nil((out .. err):find("tok-abc123", 1, true))
      assert.is_truthy(out:find("token is ***", 1, true), out)
    end)

    it("shows a live progress line only on a terminal", function()
      if not sh.ok("command -v script >/dev/null 2>&1") then
        pending("script(1) is not installed")
        return
      end
      local inner = ("env %s TMPDIR=%s %s %s fleet 3 --concurrency 1 -- 'sleep 0.15'"):format(
        ENV, q(scratch .. "/tmp"), child.LUA, q(BIN))
      local out = capture("script -qec " .. q(inner) .. " /dev/null")
      assert.is_truthy(out:find("\r\27[Kfleet: %d/3 done, %d running, %d failed, [%d.]+s"), out)
      assert.is_truthy(out:find("3 sandboxes: 3 ok, 0 failed", 1, true), out)
    end)
  end)

  describe("other commands", function()
    it("prints usage for --help and exits 0", function()
      local code, out = sandkit { "--help" }
      assert.are.equal(0, code)
      assert.is_truthy(out:find("sandkit exec [options]", 1, true))
      assert.are.equal(out, (select(2, sandkit { "exec", "--help" })))
    end)

    it("bare, with no arguments, is a usage error: the usage on stderr, exit 2 (as git and luarocks)", function()
      local code, out, err = sandkit {}
      assert.are.equal(2, code)
      assert.are.equal("", out)
      assert.are.equal(select(2, sandkit { "--help" }), err)
    end)

    it("lists providers", function()
      local code, out = sandkit { "providers" }
      assert.are.equal(0, code)
      assert.is_truthy(out:find("^local%s+LocalSandbox"), out)
      code, out = sandkit { "providers", "local" }
      assert.are.equal(0, code)
      assert.is_truthy(out:find("working_directory", 1, true), out)
      assert.are.equal(2, (sandkit { "providers", "nope" }))
    end)

    it("providers ID says each option's default once, arrays as written in Lua", function()
      for _, p in ipairs(require("sandkit").providers()) do
        -- where a descriptor has a default, its description leaves it to the field
        for key, spec in pairs(p.options) do
          if spec.default ~= nil then
            assert.is_nil(spec.description:lower():find("default", 1, true), p.id .. "." .. key .. ": " .. spec.description)
          end
        end
        local code, out = sandkit { "providers", p.id }
        assert.are.equal(0, code)
        for line in out:gmatch("[^\n]+") do
          local _, n = line:lower():gsub("%(default", "")
          local _, m = line:lower():gsub("default:", "")
          assert.is_true(n <= 1 and m <= 1, p.id .. ": " .. line)
          assert.is_nil(line:find("table: 0x", 1, true), p.id .. ": " .. line)
        end
        if p.id == "local" then
          assert.is_truthy(out:find("allow_network +boolean +bwrap: keep the host network[^\n]*%(default: false%)\n"), out)
        elseif p.id == "apple-container" then
          assert.is_truthy(out:find('(default: { "sleep", "infinity" })', 1, true), out)
        end
      end
    end)
  end)

  describe("parse", function()
    local function parse(argv, env)
      return cli.parse(argv, function(k) return (env or {})[k] end)
    end

    it("splits flags, the command and its arguments", function()
      local o = parse { "exec", "--timeout=500", "--env", "A=1", "--env=B=x=y", "--cwd", "d", "--", "ls", "-l", "--", "x" }
      assert.are.equal(500, o.timeout)
      assert.are.same({ A = "1", B = "x=y" }, o.env)
      assert.are.equal("d", o.cwd)
      assert.are.equal("ls", o.cmd)
      assert.are.same({ "-l", "--", "x" }, o.args)
      assert.are.equal("local", o.provider)
    end)

    it("starts the command at the first non-flag word", function()
      local o = parse { "fleet", "3", "--concurrency", "2", "echo", "--not-a-flag" }
      assert.are.equal(3, o.n)
      assert.are.equal(2, o.concurrency)
      assert.are.equal("echo", o.cmd)
      assert.are.same({ "--not-a-flag" }, o.args)
    end)

    it("raises usage errors as tables", function()
      local ok, err = pcall(parse, { "exec", "--nope" })
      assert.is_false(ok)
      assert.is_truthy(err.usage:find("--nope", 1, true))
    end)
  end)

  describe("format_summary", function()
    it("prints one row per sandbox and min/median/max", function()
      local s = cli.format_summary({
        { index = 1, exit_code = 0, time_ms = 10, output = "a" },
        { index = 2, exit_code = 1, time_ms = 30, output = "b", failed = true },
        { index = 3, exit_code = 124, time_ms = 20, output = "", failed = true, timed_out = true },
        { index = 4, exit_code = 0, time_ms = 40, output = "d" },
      }, 45)
      assert.is_truthy(s:find("4 sandboxes: 2 ok, 2 failed (1 timed out)", 1, true), s)
      assert.is_truthy(s:find("min 10.0, median 25.0, max 40.0; sum 100.0, wall 45.0", 1, true), s)
    end)
  end)
end)

describe("examples", function()
  local function run_example(name)
    local out, code = capture(("cd %s && env %s timeout -k 5 120 %s examples/%s 2>&1"):format(
      q(ROOT), ENV, child.LUA, name))
    return code, out
  end

  it("demo.lua runs a fleet, prints what happened and exits 0", function()
    local code, out = run_example("demo.lua")
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("primes below 300000: 25997 (expected 25997)", 1, true), out)
    local finished = 0
    for _ in out:gmatch("%[sandbox %d%] awk") do finished = finished + 1 end
    assert.are.equal(8, finished, out)
    assert.is_truthy(out:find("exit 124, timed_out=true", 1, true), out)
    assert.is_truthy(out:find("demo finished", 1, true), out)
  end)

  it("host_loop.lua drives sandkit from a plain while loop", function()
    local code, out = run_example("host_loop.lua")
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("tick 5", 1, true), out)
  end)

  it("tasks.lua runs many tasks", function()
    local code, out = run_example("tasks.lua")
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("100 tasks on 4 sandboxes: 100 distinct checksums", 1, true), out)
  end)
end)
