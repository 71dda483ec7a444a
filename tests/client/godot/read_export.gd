# read_export.gd - how a Godot 3 game reads terrain-client export's files,
# run headless by tests/client/godot_export.sh with Debian's godot3-server:
#
#   EXPORT_BASE=/tmp/w GODOT_OUT=/tmp/godot.txt godot3-server -s read_export.gd
#
# Reads BASE.json (the sidecar) with JSON.parse, BASE.r16 with File.get_16()
# (little-endian, File's default) and BASE.png with Image.load(), and writes
# GODOT_OUT: a line "width height image_format", then one line per sample in
# row order: the .r16 value, the height it gives through the sidecar
# (offset_m + value * metres_per_unit), and the PNG pixel's red channel as
# Godot gives it (0..1) and the height that gives (offset_m + red * 65535 *
# metres_per_unit). Exits 0, or 1 after printing what failed.
extends SceneTree


func fail(what):
	printerr("read_export.gd: ", what)
	quit(1)


func _init():
	var base = OS.get_environment("EXPORT_BASE")
	var out_path = OS.get_environment("GODOT_OUT")
	var f = File.new()
	if f.open(base + ".json", File.READ) != OK:
		return fail("cannot open " + base + ".json")
	var parsed = JSON.parse(f.get_as_text())
	f.close()
	if parsed.error != OK:
		return fail("the sidecar is not JSON: " + parsed.error_string)
	var side = parsed.result
	var w = int(side["width"])
	var h = int(side["height"])
	var offset = float(side["offset_m"])
	var unit = float(side["metres_per_unit"])

	if f.open(base + ".r16", File.READ) != OK:
		return fail("cannot open " + base + ".r16")
	if f.get_len() != 2 * w * h:
		return fail("the .r16 is %d bytes, not 2 * %d * %d" % [f.get_len(), w, h])
	var raw = PoolIntArray()
	raw.resize(w * h)
	for k in range(w * h):
		raw[k] = f.get_16()
	f.close()

	var img = Image.new()
	if img.load(base + ".png") != OK:
		return fail("Image.load cannot read " + base + ".png")
	if img.get_width() != w or img.get_height() != h:
		return fail("the PNG is %d x %d" % [img.get_width(), img.get_height()])
	img.lock()

	var out = File.new()
	if out.open(out_path, File.WRITE) != OK:
		return fail("cannot write " + out_path)
	out.store_line("%d %d %d" % [w, h, img.get_format()])
	for j in range(h):
		for i in range(w):
			var v = raw[j * w + i]
			var red = img.get_pixel(i, j).r
			out.store_line("%d %.4f %.6f %.4f" % [v, offset + v * unit, red, offset + red * 65535.0 * unit])
	img.unlock()
	out.close()
	quit(0)
