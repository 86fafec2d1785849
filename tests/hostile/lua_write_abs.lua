servesim.write_json("/dev/null", {a = 1})
