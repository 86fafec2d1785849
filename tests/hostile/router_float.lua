return {route = function(r, loads) return 1.5 end}
