loadfile("/etc/passwd")()
