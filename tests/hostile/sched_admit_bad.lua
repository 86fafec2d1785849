return {schedule = function(v) v:advance_all() v:try_admit("nobody") end}
