return {route = function(r, loads) return #loads + 1 end}
