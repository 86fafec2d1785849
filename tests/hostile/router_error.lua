return {route = function(r, loads) error("router boom") end}
