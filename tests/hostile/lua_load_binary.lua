local f = load("\27Lua\84\0")
assert(f, "binary chunk refused")
