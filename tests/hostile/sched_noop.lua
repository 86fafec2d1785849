return {schedule = function(v) end}
