local M = {}
function M.schedule(v)
  v:advance_all()
  while #v.running < v.max_running and #v.waiting > 0 do
    if not v:try_admit(v.waiting[1]) then break end
  end
end
return M
