module terrain

go 1.19
