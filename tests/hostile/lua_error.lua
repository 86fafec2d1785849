error("boom from script")
