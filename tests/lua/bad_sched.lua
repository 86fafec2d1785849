-- bad_sched.lua -- a scheduler that misbehaves in the way args.case says;
-- tests/test_lua.c runs each case and checks the error names this file and
-- the line marked "@case" below.  Otherwise it is FCFS continuous.

local case = (...).case

local M = {}

local function fcfs(v)
  v:advance_all()
  while #v.running < v.max_running and #v.waiting > 0 do
    if not v:try_admit(v.waiting[1]) then break end
  end
end

function M.schedule(v)
  local w = v.waiting[1]
  if case == "error_nil" then
    error() -- @error_nil
  elseif case == "error_msg" then
    error("boom") -- @error_msg
  elseif case == "loop" then
    while true do end -- @loop
  elseif case == "pcall_loop" then
    while true do pcall(function() while true do end end) end
  elseif case == "memory" then
    local t = {}
    for i = 1, 1e9 do t[i] = string.rep("x", 1000) .. i end
  elseif case == "string_rep" then
    local s = string.rep("x", 1 << 30)
    return s
  elseif case == "unknown_id" and w then
    v:admit("nope") -- @unknown_id
  elseif case == "table_unknown_id" and w then
    return {admit = {"nope"}}
  elseif case == "chunk_zero" and w then
    v:admit(w, 0) -- @chunk_zero
  elseif case == "chunk_negative" and w then
    return {admit = {{w, -5}}}
  elseif case == "chunk_fraction" and w then
    v:admit(w, 2.5) -- @chunk_fraction
  elseif case == "budget" and w then
    v:admit(w) -- @budget
  elseif case == "kv" then
    for _ = 1, #v.waiting do v:admit(v.waiting[1]) end -- @kv
  elseif case == "table_kv" then
    local all = {}
    for i = 1, #v.waiting do all[i] = v.waiting[i] end
    return {admit = all}
  elseif case == "max_running" then
    for _ = 1, #v.waiting do v:admit(v.waiting[1]) end -- @max_running
  elseif case == "wrong_type" then
    return 42
  elseif case == "table_bad_key" then
    return {admitt = {}}
  elseif case == "duplicate" and #v.running > 0 then
    v:advance_all()
    v:decode(v.running[1]) -- @duplicate
  elseif case == "decode_prefilling" and w then
    v:admit(w, 100)
    v:decode(w) -- @decode_prefilling
  elseif case == "prefill_waiting" and w then
    v:prefill(w, 10) -- @prefill_waiting
  elseif case == "empty" and #v.running > 0 then
    return -- @empty
  elseif case == "readonly_view" then
    v.now = 0 -- @readonly_view
  elseif case == "readonly_list" and w then
    v.waiting[1] = w -- @readonly_list
  elseif case == "readonly_request" and w then
    w.prompt_tokens = 1 -- @readonly_request
  elseif case == "rawset_view" then
    rawset(v, "now", 0) -- @rawset_view
  elseif case == "setmetatable_request" and w then
    assert(getmetatable(w) == "locked")
    setmetatable(w, {}) -- @setmetatable_request
  elseif case == "unknown_field" and w then
    local x = w.prefil_left -- @unknown_field
  elseif case == "chunk_string" and w then
    return {admit = {{w, "all"}}}
  elseif case == "recursion" then
    local function f(n) return 1 + f(n + 1) end
    f(1)
  elseif case == "decode_finished" and M.done then
    v:decode(M.done) -- @decode_finished
  end
  if case == "decode_finished" and not M.done and #v.running > 0 then M.done = v.running[1] end
  fcfs(v)
end

if case == "arrival_wrong_type" then
  function M.on_arrival(v, r) return {} end
elseif case == "arrival_error" then
  function M.on_arrival(v, r) error("arrival boom " .. r.id) end -- @arrival_error
elseif case == "arrival_reject_all" then
  function M.on_arrival(v, r) return "reject" end
elseif case == "arrival_admit" then
  function M.on_arrival(v, r) v:admit(r) end -- @arrival_admit
elseif case == "arrival_advance" then
  function M.on_arrival(v, r) v:advance_all() end -- @arrival_advance
end

if case == "no_schedule" then return {} end
if case == "not_a_table" then return 5 end
if case == "chunk_error" then error("at load time") end -- @chunk_error
return M
