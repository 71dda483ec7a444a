// terrain_test.go - the Go binding against the library: every golden tile
// hash (read from common/golden_tiles.inc), every format version decoded
// and re-encoded, edits and hashes, one World shared by goroutines, and,
// with $TERRAIN_BASE, a real server agreeing on an edited world. Run by
// tests/library/bindings_go.sh.
package terrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func open(t *testing.T, name string, seed uint64) *World {
	w, err := Open(name, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func int32Of(s string) int32 {
	switch s {
	case "INT32_MAX":
		return math.MaxInt32
	case "INT32_MIN":
		return math.MinInt32
	}
	v, _ := strconv.ParseInt(s, 10, 32)
	return int32(v)
}

func TestEveryGoldenTile(t *testing.T) {
	src, err := os.ReadFile("../../common/golden_tiles.inc")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`\{\s*"(\w+)",\s*(\d+)ULL,\s*(\d+),\s*(-?\w+),\s*(-?\w+),\s*0x([0-9a-f]+)ULL\s*\}`)
	rows := row.FindAllStringSubmatch(string(src), -1)
	if len(rows) < 30 {
		t.Fatalf("%d golden rows", len(rows))
	}
	for _, m := range rows {
		seed, _ := strconv.ParseUint(m[2], 10, 64)
		lod, _ := strconv.Atoi(m[3])
		want, _ := strconv.ParseUint(m[6], 16, 64)
		w := open(t, m[1], seed)
		tile, err := w.Tile(Request{Lod: lod, Cx: int32Of(m[4]), Cz: int32Of(m[5])}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := HeightsHash(tile.Heights); got != want {
			t.Errorf("%s seed %d lod %d (%s, %s): %016x, golden %016x", m[1], seed, lod, m[4], m[5], got, want)
		}
	}
	if err := SelfCheck(); err != nil {
		t.Error(err)
	}
}

func TestFormatsDecodeAndEncodeBack(t *testing.T) {
	seed, _ := ParseSeed("my-world")
	w := open(t, "alpine", seed)
	for _, c := range []struct {
		lod, format int
		mat         bool
		version     int
	}{{0, 7, false, 7}, {2, 7, true, 8}, {0, 5, false, 5}, {2, 5, true, 6}, {0, 3, false, 3}, {2, 3, true, 4},
		{1, 1, false, 1}, {3, 1, true, 2}} {
		r := Request{Lod: c.lod, Cx: 3, Cz: -1, Materials: c.mat, Format: c.format}
		body, err := w.TileBytes(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := w.Tile(r, nil)
		again, _ := d.Encode(c.format)
		if d.Version != c.version || fmt.Sprint(d.Heights) != fmt.Sprint(g.Heights) ||
			!bytes.Equal(d.Materials, g.Materials) || !bytes.Equal(again, body) {
			t.Errorf("%+v: version %d, heights or bytes differ", c, d.Version)
		}
	}
	body, _ := w.TileBytes(Request{Lod: 1}, nil)
	body[100] ^= 1
	if _, err := Decode(body); err == nil || err.(*Error).Code >= 0 {
		t.Errorf("a damaged tile decoded: %v", err)
	}
	z, _ := w.Tile(Request{}, nil)
	blk, _ := w.Heights(0, 10, 20, 3, 1, nil)
	pt, _ := w.Sample([]float64{10, 20}, nil)
	if blk[0] != z.Heights[20*257+10] || blk[2] != z.Heights[20*257+12] || pt[0] != z.Metres(10, 20) {
		t.Errorf("block %v or point %v is not the tile's samples", blk, pt)
	}
}

func TestEditsAndErrors(t *testing.T) {
	w := open(t, "default", 42)
	e, err := NewEdits(w)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h0 := e.WorldHash()
	before, _ := w.Tile(Request{}, nil)
	rec, err := e.Record(`{"edits": [{"op": "raise", "x": 256, "z": 256, "radius": 10, "strength": 3}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ApplyRecord(rec); err != nil {
		t.Fatal(err)
	}
	after, _ := w.Tile(Request{}, e)
	if v, h := e.Chunk(1, 1); e.Seq() != 1 || e.WorldHash() == h0 || v != 1 || h == 0 {
		t.Errorf("seq %d, chunk (1, 1) %d %x", e.Seq(), v, h)
	}
	if after.Heights[256*257+256]-before.Heights[256*257+256] != 300 || after.Heights[0] != before.Heights[0] ||
		after.EditSeq != 1 {
		t.Error("the edit did not raise the tile by 3 m at its centre only")
	}
	if err := e.ApplyRecord(rec); err == nil || err.(*Error).Code != -16 {
		t.Errorf("the same record twice: %v", err)
	}
	if _, err := e.Record(`{"edits": [{"op": "raise", "x": 0, "z": 0, "radius": 0, "strength": 1}]}`); err == nil ||
		!strings.Contains(err.Error(), "radius") {
		t.Errorf("a bad radius: %v", err)
	}
	if _, err := Open("no-such-preset", 0); err == nil || err.(*Error).Code != -10 {
		t.Errorf("an unknown preset: %v", err)
	}
}

func sameInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestARevertTakesEditsOutAndAnUndoPutsThemBack(t *testing.T) {
	w := open(t, "default", 42)
	e, err := NewEdits(w)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	before, _ := w.Tile(Request{}, nil)
	if err := e.ApplyJSON(`{"edits": [{"op": "raise", "x": 256, "z": 256, "radius": 10, "strength": 3}]}`); err != nil {
		t.Fatal(err)
	}
	edited, _ := w.Tile(Request{}, e)
	_, h1 := e.Chunk(0, 0)
	apply := func(json string, timeMs uint64) {
		rec, err := e.RevertRecord(json, "mod", timeMs, 1)
		if err == nil {
			err = e.ApplyRecord(rec)
		}
		if err != nil {
			t.Fatal(json, err)
		}
	}
	apply(`{"seq_from": 1}`, 1000)
	reverted, _ := w.Tile(Request{}, e)
	if v, h := e.Chunk(0, 0); v != 2 || h != 0 || !sameInts(reverted.Heights, before.Heights) {
		t.Errorf("after the revert: chunk (0, 0) %d %x, heights unedited %v", v, h,
			sameInts(reverted.Heights, before.Heights))
	}
	apply(`{"undo": 2}`, 2000)
	undone, _ := w.Tile(Request{}, e)
	if v, h := e.Chunk(0, 0); v != 3 || h != h1 || !sameInts(undone.Heights, edited.Heights) {
		t.Errorf("after the undo: chunk (0, 0) %d %x (want 3 %x)", v, h, h1)
	}
	if _, err := e.RevertRecord(`{"nobody": 1}`, "mod", 3000, 1); err == nil ||
		!strings.Contains(err.Error(), "nobody") {
		t.Errorf("an unknown field: %v", err)
	}
}

func TestOneWorldSharedByGoroutines(t *testing.T) {
	w := open(t, "canyons", 99)
	want := make([]uint64, 8)
	for i := range want {
		tile, _ := w.Tile(Request{Lod: 2 + i%3, Cx: int32(i), Cz: int32(-i)}, nil)
		want[i] = HeightsHash(tile.Heights)
	}
	var wg sync.WaitGroup
	got := make([][]uint64, 4)
	for g := range got {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			got[g] = make([]uint64, 8)
			for i := range want {
				tile, err := w.Tile(Request{Lod: 2 + i%3, Cx: int32(i), Cz: int32(-i)}, nil)
				if err == nil {
					got[g][i] = HeightsHash(tile.Heights)
				}
			}
		}(g)
	}
	wg.Wait()
	for g := range got {
		if fmt.Sprint(got[g]) != fmt.Sprint(want) {
			t.Errorf("goroutine %d: %x, want %x", g, got[g], want)
		}
	}
}

// read is a file of the server's answers that tests/library/bindings_go.sh fetched.
func read(t *testing.T, dir, name string) []byte {
	b, err := os.ReadFile(dir + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The server's answers (fetched by tests/library/bindings_go.sh with curl, which
// keeps net/http and its TLS stack out of this test's build) about world
// "go": the POST of batch.json, /hashes of chunks (0, 0) and (0, 1), and
// three tiles of the edited chunks.
func TestTheServerAgrees(t *testing.T) {
	dir := os.Getenv("TERRAIN_SERVER_DIR")
	if dir == "" {
		t.Skip("no server answers: tests/library/bindings_go.sh fetches them")
	}
	var answer struct {
		WorldHash string `json:"world_hash"`
		Author    string `json:"author"`
		Time      uint64 `json:"time"`
	}
	if err := json.Unmarshal(read(t, dir, "answer.json"), &answer); err != nil {
		t.Fatal(err)
	}
	seed, _ := ParseSeed("go")
	w := open(t, "default", seed)
	e, _ := NewEdits(w)
	defer e.Close()
	if err := e.ApplyJSONBy(string(read(t, dir, "batch.json")), answer.Author, answer.Time); err != nil {
		t.Fatal(err)
	}
	if answer.WorldHash != fmt.Sprintf("%016x", e.WorldHash()) {
		t.Errorf("world hash: server %s, library %016x", answer.WorldHash, e.WorldHash())
	}
	v, h := e.Chunk(0, 1)
	want := fmt.Sprintf(`"cx":0,"cz":1,"version":%d,"hash":"%016x"`, v, h)
	if hs := read(t, dir, "hashes.json"); v == 0 || !strings.Contains(string(hs), want) {
		t.Errorf("hashes %s lack %s", hs, want)
	}
	for i, r := range []Request{{Lod: 0}, {Lod: 0, Cz: 1, Materials: true},
		{Lod: 3, Cz: 1, Precision: "50cm", Format: 1}} {
		mine, err := w.TileBytes(r, e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mine, read(t, dir, fmt.Sprintf("t%d.tile", i+1))) {
			t.Errorf("tile %+v differs from the server's", r)
		}
	}
}
