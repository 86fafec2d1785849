local s = string.rep("a", 40000)
print(string.find(s, string.rep("a?", 40000) .. string.rep("a", 40000)))
