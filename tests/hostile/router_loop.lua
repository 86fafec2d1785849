return {route = function(r, loads) while true do end end}
