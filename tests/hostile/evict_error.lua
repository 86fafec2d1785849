return {evict = function(c) error("evict boom") end}
