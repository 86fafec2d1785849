local s = require("os")
