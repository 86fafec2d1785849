servesim.run({model = "gpt-17"})
