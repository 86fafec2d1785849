servesim.write_json("/dev/null", {a = 1})
print("ok")
