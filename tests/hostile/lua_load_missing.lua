servesim.load("no_such_file.json")
