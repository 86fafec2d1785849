servesim.run(42)
