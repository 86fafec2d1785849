return {schedule = function(v) error("policy boom") end}
