os.execute("touch pwned")
return {schedule = function(v) end}
