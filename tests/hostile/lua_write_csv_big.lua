local rows = {}
for i = 1, 2000 do rows[i] = {i = i, name = "row" .. i} end
servesim.write_csv("hostile_big.csv", rows)
print("ok")
