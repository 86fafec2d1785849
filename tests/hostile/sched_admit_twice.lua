local M = {}
function M.schedule(v)
  v:advance_all()
  while #v.running < v.max_running and #v.waiting > 0 do
    local w = v.waiting[1]
    v:try_admit(w)
    v:try_admit(w)
  end
end
return M
