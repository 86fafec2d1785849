return {route = function(r, loads) return 1 end}
