-- Every reference to a document section in the repository names a file of
-- the repository and a heading that file has (issue 14, item 2); nothing
-- cites the design notes kept outside it. The form and the rules are in
-- spec/helpers/doc_refs.lua; the protocol notes are in docs/protocols/.
local doc_refs = require "helpers.doc_refs"

local ROOT = os.getenv("R") or (io.popen("pwd"):read("l"))
local S = doc_refs.SECT
-- Names of documents outside the repository, assembled here so that this
-- file passes its own check.
local DESIGN = "DESIGN" .. ".md"
local MODAL = "modal" .. ".md"

describe("document references", function()
  it("all resolve, and none leaves the repository", function()
    local files = doc_refs.files(ROOT)
    assert.is_true(#files > 100, "git ls-files found the repository's files")
    local problems = doc_refs.check(ROOT, files)
    assert.are.same({}, problems)
  end)

  it("are checked in every kind of file the references live in", function()
    local seen = {}
    for _, f in ipairs(doc_refs.files(ROOT)) do seen[f] = true end
    for _, f in ipairs({ "src/core/ws.c", "src/core/providers/platform/platform_exec.c", "src/core/providers/platform/fs.lua",
      "spec/servers/platform/lib/rest.mjs", "docs/protocols/platform.md", "README.md" }) do
      assert.is_true(seen[f], f)
    end
  end)

  it("each protocol note has the numbered sections the code cites", function()
    for _, name in ipairs({ "platform", "modal", "event-core", "apple-container", "conformance" }) do
      local f = assert(io.open(ROOT .. "/docs/protocols/" .. name .. ".md"))
      local text = f:read("a")
      f:close()
      assert.truthy(text:match("\n## 1%. "), name .. " has a section 1")
    end
  end)
end)

describe("the reference checker", function()
  local function check(file, line) return doc_refs.check_text(ROOT, file, line) end
  local function one(problems, pattern)
    assert.are.equal(1, #problems, table.concat(problems, "\n"))
    assert.truthy(problems[1]:find(pattern), problems[1])
  end

  it("accepts numbered and titled sections that exist, and chains of them", function()
    assert.are.same({}, check("src/x.c", "/* see docs/protocols/platform.md " .. S .. "2.5 */"))
    assert.are.same({}, check("src/x.c", "(docs/protocols/platform.md " .. S .. "2.3, " .. S .. "2.4 and " .. S .. "3.5)"))
    assert.are.same({}, check("src/x.c", "(docs/protocols/platform.md " .. S .. "2.6.)"))
    assert.are.same({}, check("src/x.c", 'docs/reliability.md ' .. S .. '"HTTP/2 stalls in libcurl 7.88"'))
    assert.are.same({}, check("src/x.c", "codes an endpoint may send (RFC 6455 " .. S .. "7.4)"))
    assert.are.same({}, check("docs/protocols/modal.md", "as said above (" .. S .. "1.8)"))
  end)

  it("reports a section number the document does not have, with file and line", function()
    local problems = check("src/core/x.c", "ok\n/* docs/protocols/platform.md " .. S .. "9.9 */")
    one(problems, "^src/core/x%.c:2: ")
    assert.truthy(problems[1]:find("no heading numbered 9.9", 1, true))
  end)

  it("reports a heading title the document does not have", function()
    one(check("a.lua", 'docs/security.md ' .. S .. '"No such heading"'), 'no heading "No such heading"')
  end)

  it("reports a document that does not exist", function()
    local problems = check("a.lua", "docs/protocols/" .. "nothing.md " .. S .. "1")
    assert.truthy(#problems >= 1)
    assert.truthy(table.concat(problems, "\n"):find("/nothing.md does not exist", 1, true))
  end)

  it("reports a section sign with no document before it, outside docs/", function()
    one(check("src/x.c", "/* spec " .. S .. "5.2 */"), "without a document")
    one(check("docs/x.lua", "-- (" .. S .. "3.5)"), "without a document")
    -- a bare sign in a doc means that doc, and is checked there
    one(check("docs/protocols/modal.md", "(" .. S .. "42)"), "no heading numbered 42 in docs/protocols/modal.md")
  end)

  it("reports a chain link that is not joined to its document", function()
    one(check("src/x.c", "docs/protocols/platform.md " .. S .. "2.5; see " .. S .. "3.5"), "without a document")
  end)

  it("reports documents kept outside the repository", function()
    one(check("a.lua", "-- (" .. DESIGN .. ")"), "not in the repository")
    local problems = check("a.c", "/* " .. MODAL .. " " .. S .. "4 */")
    assert.truthy(table.concat(problems, "\n"):find("without its path docs/protocols/" .. MODAL, 1, true))
    one(check("a.c", "/* see ../../shared" .. "/specs/x */"), "not in the repository")
  end)

  it("does not take a longer name for a protocol note", function()
    assert.are.same({}, check("a.lua", "-- docs/modal-filesystem.md"))
  end)

  it("reports the older form path, \"Title\"", function()
    one(check("a.c", "/* docs/security.md" .. ', "Secrets" */'), "write docs/security.md " .. S)
  end)

  it("reports a Markdown path under docs/ that does not exist", function()
    one(check("a.lua", "-- see docs/" .. "nowhere.md"), "/nowhere%.md does not exist")
  end)
end)
