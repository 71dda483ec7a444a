module terrain.example/terrain

go 1.19
