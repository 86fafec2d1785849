servesim.write_json("../", {a = 1})
