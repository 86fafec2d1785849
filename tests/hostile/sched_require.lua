require("socket")
return {schedule = function(v) end}
