return {route = function(r, loads) loads[1].running = 0 return 1 end}
