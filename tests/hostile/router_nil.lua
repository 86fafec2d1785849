return {route = function(r, loads) end}
