error("ÿþ[31m bad bytes")
