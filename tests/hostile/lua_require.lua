local s = require("socket")
