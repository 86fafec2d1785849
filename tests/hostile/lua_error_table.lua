error({code = 7})
