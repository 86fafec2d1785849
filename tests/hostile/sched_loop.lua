return {schedule = function(v) while true do end end}
