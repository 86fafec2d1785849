return {route = function(r, loads) return 0/0 end}
