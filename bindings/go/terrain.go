// Package terrain is libterrain (common/terrain.h) from Go through cgo.
//
// The world's heights in-process, bit for bit the server's: tiles at any
// LOD and precision, heights anywhere, the tile format, edit records with
// the server's chunk and world hashes (docs/library.md).
//
//	w, err := terrain.Open("default", 42)
//	defer w.Close()
//	t, err := w.Tile(terrain.Request{Lod: 0, Cx: 0, Cz: 0}, nil)
//	fmt.Println(t.Metres(0, 0))
//
// The module is terrain.example/terrain (docs/library.md, "Go"); cgo finds
// the library with pkg-config: installed (make install; PKG_CONFIG_PATH for
// a prefix of your own) or a build tree's (PKG_CONFIG_PATH=build/lib/pkgconfig,
// where make writes terrain-uninstalled.pc). A World may
// be used by any number of goroutines at once: each call takes a
// workspace from a pool. Edits may be read concurrently; Apply* needs it
// alone.
package terrain

/*
#cgo pkg-config: terrain
#include <stdlib.h>
#include <terrain.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Layers and formats (terrain.h).
const (
	LayerMaterial = 1
	FormatCurrent = 7 // versions 7/8 (1/2 below side 33): what the server sends
	FormatCoded8  = 5 // versions 5/6 (?format=5)
	FormatCoded2  = 3 // versions 3/4 (?format=3)
	FormatLZ21    = 1 // versions 1/2 (?format=1)
)

// Error is a TERRAIN_ERR_* code with the library's text and a detail.
type Error struct {
	Code   int
	Detail string
}

func (e *Error) Error() string {
	s := C.GoString(C.terrain_strerror(C.int(e.Code)))
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func check(rc C.int, detail string) error {
	if rc != 0 {
		return &Error{int(rc), detail}
	}
	return nil
}

// Version is the running library's version text ("1.0.0").
func Version() string { return C.GoString(C.terrain_version_string()) }

// Presets lists the built-in presets.
func Presets() []string {
	n := int(C.terrain_preset_count())
	v := make([]string, n)
	for i := range v {
		v[i] = C.GoString(C.terrain_preset_name(C.size_t(i)))
	}
	return v
}

// cbytes is b as a C pointer (nil for an empty slice): Go memory the
// call only reads or writes, which cgo allows.
func cbytes(b []byte) *C.char {
	if len(b) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&b[0]))
}

// ParseSeed reads a seed as the HTTP API writes it ("42", "my-world").
func ParseSeed(text string) (uint64, error) {
	b := []byte(text)
	var seed C.uint64_t
	if err := check(C.terrain_seed_parse(cbytes(b), C.size_t(len(b)), &seed), text); err != nil {
		return 0, err
	}
	return uint64(seed), nil
}

// HeightsHash is XXH3-64 of heights as little-endian int32: the golden tiles' hash.
func HeightsHash(h []int32) uint64 {
	if len(h) == 0 {
		return uint64(C.terrain_heights_hash(nil, 0))
	}
	return uint64(C.terrain_heights_hash((*C.int32_t)(unsafe.Pointer(&h[0])), C.size_t(len(h))))
}

// SelfCheck fails unless this library makes the world it was built to make.
func SelfCheck() error {
	var msg [512]C.char
	rc := C.terrain_selfcheck(&msg[0], C.size_t(len(msg)))
	return check(rc, C.GoString(&msg[0]))
}

// WorldInfo is struct terrain_world_info.
type WorldInfo struct {
	AlgoVersion                       int
	Fingerprint, Seed                 uint64
	ChunkLog2, MaxLod                 int
	QuantumUm                         int // micrometres per height unit
	Eroded                            bool
	MinHeightM, MaxHeightM, SeaLevelM float64
}

// World is a built-in preset or a preset's JSON, and a seed.
type World struct {
	w     *C.struct_terrain_world
	works sync.Pool
	Name  string
	Info  WorldInfo
}

type work struct{ k *C.struct_terrain_work }

func newWorld(h *C.struct_terrain_world) (*World, error) {
	w := &World{w: h}
	w.works.New = func() any {
		k := &work{}
		if C.terrain_work_create(&k.k) != 0 {
			return nil
		}
		runtime.SetFinalizer(k, func(k *work) { C.terrain_work_destroy(k.k) })
		return k
	}
	var info C.struct_terrain_world_info
	info.size = C.uint32_t(unsafe.Sizeof(info))
	if err := check(C.terrain_world_info(h, &info), ""); err != nil {
		C.terrain_world_destroy(h)
		return nil, err
	}
	w.Name = C.GoString(C.terrain_world_name(h))
	w.Info = WorldInfo{int(info.algo_version), uint64(info.fingerprint), uint64(info.seed),
		int(info.chunk_log2), int(info.max_lod), int(info.quantum_um), info.eroded != 0,
		float64(info.min_height_m), float64(info.max_height_m), float64(info.sea_level_m)}
	return w, nil
}

// Open makes the world of built-in preset name and seed.
func Open(name string, seed uint64) (*World, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var h *C.struct_terrain_world
	if err := check(C.terrain_world_create(cs, C.uint64_t(seed), &h), name); err != nil {
		return nil, err
	}
	return newWorld(h)
}

// OpenJSON makes the world of a preset given as JSON text (docs/presets.md).
func OpenJSON(json []byte, seed uint64) (*World, error) {
	var h *C.struct_terrain_world
	var msg [256]C.char
	rc := C.terrain_world_create_json(cbytes(json), C.size_t(len(json)), C.uint64_t(seed), &h,
		&msg[0], C.size_t(len(msg)))
	if err := check(rc, C.GoString(&msg[0])); err != nil {
		return nil, err
	}
	return newWorld(h)
}

// Close frees the world; its Edits must be closed first.
func (w *World) Close() {
	if w.w != nil {
		C.terrain_world_destroy(w.w)
		w.w = nil
	}
}

// Side is the samples per side of a tile at lod (0 for a bad lod).
func (w *World) Side(lod int) int { return int(C.terrain_tile_side(w.w, C.int32_t(lod))) }

// Request names a tile: LOD, chunk, precision ("", "1cm", "10cm", "1m", ...),
// the material layer, and the format of TileBytes (0: FormatCurrent).
type Request struct {
	Lod       int
	Cx, Cz    int32
	Precision string
	Materials bool
	Format    int
}

func (w *World) request(r Request) (C.struct_terrain_tile_request, error) {
	var rq C.struct_terrain_tile_request
	rq.size = C.uint32_t(unsafe.Sizeof(rq))
	rq.lod, rq.cx, rq.cz = C.int32_t(r.Lod), C.int32_t(r.Cx), C.int32_t(r.Cz)
	rq.format = C.uint32_t(r.Format)
	if r.Materials {
		rq.layers = LayerMaterial
	}
	if r.Precision != "" {
		p := []byte(r.Precision)
		if rq.quantum_um = C.terrain_precision_um(cbytes(p), C.size_t(len(p))); rq.quantum_um == 0 {
			return rq, &Error{-1, "precision " + r.Precision}
		}
	}
	return rq, nil
}

func (w *World) take() (*work, error) {
	k, _ := w.works.Get().(*work)
	if k == nil {
		return nil, &Error{-2, "workspace"}
	}
	return k, nil
}

func edits(e *Edits) *C.struct_terrain_edits {
	if e == nil {
		return nil
	}
	return e.e
}

// TileInfo is a tile's header (struct terrain_tile_info).
type TileInfo struct {
	Version           int
	Fingerprint, Seed uint64
	Cx, Cz            int32
	Lod, ChunkLog2    int
	Side, QuantumUm   int // samples a row; micrometres per height unit
	EditSeq, Checksum uint64
	Layers, Filter    uint32 // bit sets
}

func infoOf(i *C.struct_terrain_tile_info) TileInfo {
	return TileInfo{int(i.version), uint64(i.fingerprint), uint64(i.seed), int32(i.cx),
		int32(i.cz), int(i.lod), int(i.chunk_log2), int(i.side), int(i.quantum_um),
		uint64(i.edit_seq), uint64(i.checksum), uint32(i.layers), uint32(i.filter)}
}

// Tile is a tile's header, side * side heights (rows of z) and materials (or nil).
type Tile struct {
	TileInfo
	Heights   []int32
	Materials []byte
}

// Metres is the height of sample (i, j).
func (t *Tile) Metres(i, j int) float64 {
	return float64(t.Heights[j*t.Side+i]) * float64(t.QuantumUm) / 1e6
}

// Tile generates the tile r of w with the edits of e (nil: none).
func (w *World) Tile(r Request, e *Edits) (*Tile, error) {
	rq, err := w.request(r)
	if err != nil {
		return nil, err
	}
	n := w.Side(r.Lod) * w.Side(r.Lod)
	if n == 0 {
		return nil, &Error{-1, fmt.Sprintf("lod %d", r.Lod)}
	}
	t := &Tile{Heights: make([]int32, n)}
	var mats *C.uint8_t
	if r.Materials {
		t.Materials = make([]byte, n)
		mats = (*C.uint8_t)(unsafe.Pointer(&t.Materials[0]))
	}
	k, err := w.take()
	if err != nil {
		return nil, err
	}
	defer w.works.Put(k)
	var info C.struct_terrain_tile_info
	info.size = C.uint32_t(unsafe.Sizeof(info))
	rc := C.terrain_generate(w.w, edits(e), k.k, &rq, (*C.int32_t)(unsafe.Pointer(&t.Heights[0])),
		C.size_t(n), mats, C.size_t(len(t.Materials)), &info)
	if err := check(rc, ""); err != nil {
		return nil, err
	}
	t.TileInfo = infoOf(&info)
	return t, nil
}

// TileBytes is the tile r as the server's tile route sends it, byte for byte.
func (w *World) TileBytes(r Request, e *Edits) ([]byte, error) {
	rq, err := w.request(r)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, int(C.terrain_tile_bound(w.w, &rq))+1)
	k, err := w.take()
	if err != nil {
		return nil, err
	}
	defer w.works.Put(k)
	var n C.size_t
	rc := C.terrain_generate_encoded(w.w, edits(e), k.k, &rq, (*C.uint8_t)(unsafe.Pointer(&buf[0])),
		C.size_t(len(buf)), &n)
	if err := check(rc, ""); err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// Heights is the nx x nz block of the LOD-lod lattice at world (x0, z0).
func (w *World) Heights(lod int, x0, z0 int64, nx, nz int, e *Edits) ([]int32, error) {
	if nx < 1 || nz < 1 {
		return nil, &Error{-1, "block size"}
	}
	h := make([]int32, nx*nz)
	k, err := w.take()
	if err != nil {
		return nil, err
	}
	defer w.works.Put(k)
	rc := C.terrain_heights(w.w, edits(e), k.k, C.int32_t(lod), C.int64_t(x0), C.int64_t(z0),
		C.uint32_t(nx), C.uint32_t(nz), (*C.int32_t)(unsafe.Pointer(&h[0])), C.size_t(len(h)))
	return h, check(rc, "")
}

// Sample is the heights in metres at points xz = {x0, z0, x1, z1, ...}.
func (w *World) Sample(xz []float64, e *Edits) ([]float64, error) {
	m := make([]float64, len(xz)/2)
	if len(m) == 0 {
		return m, nil
	}
	k, err := w.take()
	if err != nil {
		return nil, err
	}
	defer w.works.Put(k)
	rc := C.terrain_sample(w.w, edits(e), k.k, (*C.double)(unsafe.Pointer(&xz[0])), C.size_t(len(m)),
		(*C.double)(unsafe.Pointer(&m[0])))
	return m, check(rc, "")
}

// Decode reads a tile of any format version the server sends.
func Decode(b []byte) (*Tile, error) {
	var info C.struct_terrain_tile_info
	info.size = C.uint32_t(unsafe.Sizeof(info))
	p := (*C.uint8_t)(unsafe.Pointer(cbytes(b)))
	if err := check(C.terrain_decode_info(p, C.size_t(len(b)), &info), ""); err != nil {
		return nil, err
	}
	n := int(info.side) * int(info.side)
	t := &Tile{Heights: make([]int32, n), Materials: make([]byte, n)}
	rc := C.terrain_decode(p, C.size_t(len(b)), &info, (*C.int32_t)(unsafe.Pointer(&t.Heights[0])),
		C.size_t(n), (*C.uint8_t)(unsafe.Pointer(&t.Materials[0])), C.size_t(n))
	if err := check(rc, ""); err != nil {
		return nil, err
	}
	t.TileInfo = infoOf(&info)
	if t.Layers&LayerMaterial == 0 {
		t.Materials = nil
	}
	return t, nil
}

// Encode is the tile's canonical bytes in format (FormatCurrent, FormatCoded8, FormatCoded2 or FormatLZ21).
func (t *Tile) Encode(format int) ([]byte, error) {
	var info C.struct_terrain_tile_info
	info.size = C.uint32_t(unsafe.Sizeof(info))
	info.fingerprint, info.seed = C.uint64_t(t.Fingerprint), C.uint64_t(t.Seed)
	info.cx, info.cz, info.lod = C.int32_t(t.Cx), C.int32_t(t.Cz), C.int32_t(t.Lod)
	info.chunk_log2, info.side, info.quantum_um = C.int32_t(t.ChunkLog2), C.uint32_t(t.Side),
		C.uint32_t(t.QuantumUm)
	info.edit_seq, info.layers = C.uint64_t(t.EditSeq), C.uint32_t(t.Layers)
	var mats *C.uint8_t
	if t.Materials != nil {
		mats = (*C.uint8_t)(unsafe.Pointer(&t.Materials[0]))
	}
	buf := make([]byte, int(C.terrain_encode_bound(info.side, info.layers))+1)
	var n C.size_t
	rc := C.terrain_encode(&info, (*C.int32_t)(unsafe.Pointer(&t.Heights[0])), mats, C.uint32_t(format),
		(*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &n)
	if err := check(rc, ""); err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// Edits is a world's edit log: batch records applied in sequence, with the
// world and chunk hashes the server publishes.
type Edits struct {
	e *C.struct_terrain_edits
	w *World
}

// NewEdits is an empty log of w.
func NewEdits(w *World) (*Edits, error) {
	e := &Edits{w: w}
	if err := check(C.terrain_edits_create(w.w, &e.e), ""); err != nil {
		return nil, err
	}
	return e, nil
}

// Close frees the log.
func (e *Edits) Close() {
	if e.e != nil {
		C.terrain_edits_destroy(e.e)
		e.e = nil
	}
}

// Seq is the last applied sequence number, WorldHash the world hash after it.
func (e *Edits) Seq() uint64       { return uint64(C.terrain_edits_seq(e.e)) }
func (e *Edits) WorldHash() uint64 { return uint64(C.terrain_edits_world_hash(e.e)) }

// Record is the canonical record of a batch given as POST .../edits JSON,
// numbered from the log's next sequence number.
func (e *Edits) Record(json string) ([]byte, error) {
	return e.RecordBy(json, "", 0)
}

// RecordBy is Record as the server writes it: sent by author at the log's
// timeMs (its answer says both), so that the world hash is the server's
// too. author "" is Record.
func (e *Edits) RecordBy(json, author string, timeMs uint64) ([]byte, error) {
	j := []byte(json)
	rec := make([]byte, 11103)
	var n C.size_t
	var msg [256]C.char
	var rc C.int
	if author == "" {
		rc = C.terrain_edits_record(e.w.w, C.uint64_t(e.Seq()+1), cbytes(j), C.size_t(len(j)),
			(*C.uint8_t)(unsafe.Pointer(&rec[0])), C.size_t(len(rec)), &n, &msg[0],
			C.size_t(len(msg)))
	} else {
		ca := C.CString(author)
		defer C.free(unsafe.Pointer(ca))
		rc = C.terrain_edits_record_by(e.w.w, C.uint64_t(e.Seq()+1), cbytes(j), C.size_t(len(j)),
			ca, C.uint64_t(timeMs), (*C.uint8_t)(unsafe.Pointer(&rec[0])), C.size_t(len(rec)),
			&n, &msg[0], C.size_t(len(msg)))
	}
	if err := check(rc, C.GoString(&msg[0])); err != nil {
		return nil, err
	}
	return rec[:n], nil
}

// RevertRecord is the canonical record of a revert or undo given as POST
// .../reverts JSON (a filter, or {"undo": SEQ}), sent by author at the log's
// timeMs, reaching back to edit floor, at the log's next sequence number.
func (e *Edits) RevertRecord(json, author string, timeMs, floor uint64) ([]byte, error) {
	j := []byte(json)
	rec := make([]byte, 514)
	var n C.size_t
	var msg [256]C.char
	ca := C.CString(author)
	defer C.free(unsafe.Pointer(ca))
	rc := C.terrain_edits_revert_record(e.w.w, C.uint64_t(e.Seq()+1), cbytes(j), C.size_t(len(j)),
		ca, C.uint64_t(timeMs), C.uint64_t(floor), (*C.uint8_t)(unsafe.Pointer(&rec[0])),
		C.size_t(len(rec)), &n, &msg[0], C.size_t(len(msg)))
	if err := check(rc, C.GoString(&msg[0])); err != nil {
		return nil, err
	}
	return rec[:n], nil
}

// ApplyRecord applies one batch record of the edit log.
func (e *Edits) ApplyRecord(rec []byte) error {
	return check(C.terrain_edits_apply_record(e.e, (*C.uint8_t)(unsafe.Pointer(cbytes(rec))),
		C.size_t(len(rec))), "")
}

// ApplyJSON is Record then ApplyRecord.
func (e *Edits) ApplyJSON(json string) error {
	return e.ApplyJSONBy(json, "", 0)
}

// ApplyJSONBy is RecordBy then ApplyRecord.
func (e *Edits) ApplyJSONBy(json, author string, timeMs uint64) error {
	rec, err := e.RecordBy(json, author, timeMs)
	if err != nil {
		return err
	}
	return e.ApplyRecord(rec)
}

// Chunk is chunk (cx, cz)'s edit version and hash (both 0 without edits).
func (e *Edits) Chunk(cx, cz int32) (version, hash uint64) {
	var v, h C.uint64_t
	C.terrain_edits_chunk(e.e, C.int32_t(cx), C.int32_t(cz), &v, &h)
	return uint64(v), uint64(h)
}
