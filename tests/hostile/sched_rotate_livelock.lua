-- preempts every running request at every boundary and admits the tail of
-- the queue with a one-token chunk: a different request each time, so no
-- one request nears ENGINE_MAX_PREEMPTIONS (2,000 requests: 2e8 boundaries
-- before any would) while nothing progresses.  The engine-wide rule
-- (ENGINE_PREEMPTIONS_PER_PROGRESS) stops the run after about 1e5.
local M = {}
function M.schedule(v)
  for _, r in ipairs(v.running) do v:preempt(r) end
  local n = v.n_waiting
  if n > 0 then v:admit(v.waiting[n], 1) end
end
return M
