// Command example is libterrain from Go: a tile, a height anywhere, the
// server's bytes, an edit and the hashes a client checks itself with.
//
//	cd bindings/go && PKG_CONFIG_PATH=$PWD/../../build/lib/pkgconfig \
//	    LD_LIBRARY_PATH=$PWD/../../build/lib go run ./example
package main

import (
	"fmt"
	"log"

	"terrain.example/terrain"
)

func main() {
	w, err := terrain.Open("default", 42)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	t, err := w.Tile(terrain.Request{Lod: 0, Cx: 0, Cz: 0}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("libterrain %s: tile default/42 LOD 0 (0, 0), %d x %d, heights hash %016x\n",
		terrain.Version(), t.Side, t.Side, terrain.HeightsHash(t.Heights))
	m, _ := w.Sample([]float64{10.5, 20.25}, nil)
	fmt.Printf("height at (10.5, 20.25): %.3f m\n", m[0])
	body, _ := w.TileBytes(terrain.Request{}, nil)
	d, _ := terrain.Decode(body)
	fmt.Printf("encoded: %d bytes, ETag \"%016x\"\n", len(body), d.Checksum)
	e, _ := terrain.NewEdits(w)
	defer e.Close()
	if err := e.ApplyJSON(`{"edits": [{"op": "raise", "x": 256, "z": 256, "radius": 10, "strength": 3}]}`); err != nil {
		log.Fatal(err)
	}
	v, h := e.Chunk(0, 0)
	m, _ = w.Sample([]float64{256, 256}, e)
	fmt.Printf("after one edit: world hash %016x, chunk (0, 0) version %d hash %016x, height at (256, 256) %.2f m\n",
		e.WorldHash(), v, h, m[0])
}
