-- bad_script.lua -- an experiment script that tries to leave the sandbox
-- in the way its first argument says (servesim lua tests/lua/bad_script.lua
-- CASE [FILE]).  Each case must end in a clean error, never in an escape.
-- os_execute would write FILE (the test's own temporary directory, so
-- concurrent runs never share it; /dev/null when not given).

local case, escaped = ...

if case == "os_execute" then
  os.execute("echo escaped > " .. (escaped or "/dev/null")) -- @os_execute
elseif case == "io_open" then
  local f = io.open("/etc/passwd") -- @io_open
  print(f:read("a"))
elseif case == "require_os" then
  local os = require "os" -- @require_os
  os.exit(3)
elseif case == "require_path" then
  require "../../../etc/passwd" -- @require_path
elseif case == "load_binary" then
  -- the start of a Lua 5.4 binary chunk
  local f = load("\27LuaT\0\25\147\r\n\26\n\4\8\8\120\86\0\0\0") -- @load_binary
  f()
elseif case == "load_binary_reader" then
  local parts = {"\27LuaT", "\0\25\147\r\n\26\n"}
  local f = assert(load(function() return table.remove(parts, 1) end)) -- @load_binary_reader
  f()
elseif case == "dofile" then
  dofile("/etc/passwd") -- @dofile
elseif case == "loadfile" then
  loadfile("/etc/passwd") -- @loadfile
elseif case == "string_dump" then
  local b = string.dump(print) -- @string_dump
elseif case == "debug" then
  debug.sethook() -- @debug
elseif case == "string_rep" then
  local s = string.rep("x", 1 << 30) -- @string_rep
elseif case == "doubling" then
  collectgarbage("stop")
  local s = "x"
  while true do s = s .. s end
elseif case == "loop" then
  while true do end -- @loop
elseif case == "pcall_loop" then
  while true do pcall(function() while true do end end) end
elseif case == "error_nil" then
  error() -- @error_nil
elseif case == "error_table" then
  error(setmetatable({}, {__tostring = function() return "a table error" end}))
elseif case == "write_bad" then
  servesim.write_json("/nonexistent-dir/x.json", {1}) -- @write_bad
elseif case == "run_bad" then
  servesim.run({model = "qwen3-8b"}) -- @run_bad
elseif case == "gc_loop" then
  setmetatable({}, {__gc = function() while true do end end}) -- @gc_loop
elseif case == "pattern_blowup" then
  local s = string.rep("a", 5000)
  assert(s:find("^(%w+)=(%w+)$") == nil) -- anchored: allowed
  assert(("key = value"):match("^(%w+)%s*=%s*(%w+)$") == "key")
  assert(s:find("a*a*a*b", 1, true) == nil) -- plain: allowed
  local n = s:find("a*a*a*b") -- @pattern_blowup
elseif case == "ok" then
  assert(select("#", ...) == 1)
else
  error("unknown case " .. tostring(case))
end
