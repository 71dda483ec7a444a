#!/usr/bin/env python3
"""tilejson_check.py - the server's TileJSON documents against the official
TileJSON 3.0.0 JSON schema (tests/tiles/tilejson/3.0.0/schema.json, validated by
python3-jsonschema) and against the rules of the specification's text that
a schema cannot say, and the world info's links to them; for
tests/tiles/tilejson_schema.sh.

    tilejson_check.py SCHEMA BASE

Prints "ok: ..." / "FAIL: ..." and exits 1 on any failure.
"""
import importlib.metadata
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

import jsonschema

FAILS = []
MERCATOR_LAT = 85.0511287798066


def check(cond, msg, detail=""):
    if cond:
        print("ok: " + msg)
    else:
        print("FAIL: " + msg + (" (%s)" % detail if detail else ""))
        FAILS.append(msg)


def get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def spec_text(doc):
    """What TileJSON 3.0.0's text asks beyond its schema; a list of faults."""
    bad = []
    if doc.get("tilejson") != "3.0.0":
        bad.append("tilejson is not 3.0.0")
    tiles = doc.get("tiles") or []
    if not tiles or not all(isinstance(t, str) and urllib.parse.urlsplit(t).scheme in ("http", "https")
                            and urllib.parse.urlsplit(t).netloc for t in tiles):
        bad.append("tiles: at least one endpoint, every one absolute")
    if not all("{z}" in t and "{x}" in t and "{y}" in t for t in tiles):
        bad.append("tiles: {z}, {x} and {y} in every endpoint")
    for layer in doc.get("vector_layers", []):
        if not isinstance(layer.get("id"), str) or not isinstance(layer.get("fields"), dict):
            bad.append("a vector layer without id and fields")
    lo, hi = doc.get("minzoom", 0), doc.get("maxzoom", 30)
    if not 0 <= lo <= hi <= 30:
        bad.append("0 <= minzoom <= maxzoom <= 30")
    b = doc.get("bounds", [-180, -MERCATOR_LAT, 180, MERCATOR_LAT])
    if len(b) != 4 or not (-180 <= b[0] <= b[2] <= 180 and -90 <= b[1] <= b[3] <= 90):
        bad.append("bounds: left, bottom, right, top within -180..180, -90..90, not wrapping")
    c = doc.get("center")
    if c is not None and (len(c) != 3 or not isinstance(c[2], int) or not lo <= c[2] <= hi
                          or not (b[0] <= c[0] <= b[2] and b[1] <= c[1] <= b[3])):
        bad.append("center: longitude and latitude within the bounds, an integer zoom within minzoom..maxzoom")
    if doc.get("scheme", "xyz") not in ("xyz", "tms"):
        bad.append("scheme is xyz or tms")
    if "fillzoom" in doc and not lo <= doc["fillzoom"] <= hi:
        bad.append("fillzoom within minzoom..maxzoom")
    return bad


def check_document(validator, base, path, headers=None):
    status, h, body = get(base + path, headers)
    if status != 200:
        check(False, "GET %s" % path, "status %d" % status)
        return None
    doc = json.loads(body)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    check(not errors, "%s is valid against the TileJSON 3.0.0 schema" % path,
          "; ".join("%s: %s" % ("/".join(map(str, e.path)) or "$", e.message) for e in errors[:5]))
    bad = spec_text(doc)
    check(not bad, "%s keeps the specification's text" % path, "; ".join(bad))
    # the first tile of the centre's zoom, as a client would ask for it
    z = doc["center"][2]
    url = doc["tiles"][0].replace("{z}", str(z)).replace("{x}", str(2 ** (z - 1))).replace("{y}", str(2 ** (z - 1)))
    if headers:   # behind a proxy: the template names the proxy's host; ask ours
        parts = urllib.parse.urlsplit(url)
        url = base + urllib.parse.urlunsplit(("", "", parts.path, parts.query, ""))
    status, h, png = get(url)
    check(status == 200 and h.get("Content-Type") == "image/png" and png[:8] == b"\x89PNG\r\n\x1a\n",
          "%s: its template gives a PNG tile at the centre's zoom %d" % (path, z), "status %d" % status)
    return doc


def main():
    schema_path, base = sys.argv[1], sys.argv[2].rstrip("/")
    schema = json.load(open(schema_path))
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)
    validator = cls(schema)
    print("  python3-jsonschema %s, %s" % (importlib.metadata.version("jsonschema"), cls.__name__))
    check(not validator.is_valid({"tilejson": "3.0.0", "tiles": ["http://x/{z}/{x}/{y}.png"]}),
          "the schema refuses a document without vector_layers (it is the official one)")
    for path in ("/v1/worlds/42/maps/terrarium", "/v1/worlds/42/maps/shaded",
                 "/v1/worlds/my-world/maps/terrarium.json?gen=alpine",
                 "/v1/worlds/7/maps/shaded?gen=eroded&origin=3,-4"):
        check_document(validator, base, path)
    check_document(validator, base, "/v1/worlds/42/maps/terrarium",
                   {"Forwarded": 'for=192.0.2.1;host="maps.example:8443";proto=https'})

    # discovery: from the world's URL alone, to its maps and the OpenAPI document
    world_url = base + "/v1/worlds/my-world?gen=alpine"
    status, _, body = get(world_url)
    info = json.loads(body) if status == 200 else {}
    links = info.get("links", {})
    check(set(links.get("maps", {})) == {"terrarium", "shaded"} and "openapi" in links,
          "world info links its TileJSON documents and the OpenAPI document", json.dumps(links))
    for style, ref in links.get("maps", {}).items():
        url = urllib.parse.urljoin(world_url, ref)
        status, _, body = get(url)
        doc = json.loads(body) if status == 200 else {}
        check(status == 200 and validator.is_valid(doc) and doc.get("terrain", {}).get("style") == style
              and doc["terrain"].get("generator") == "alpine" and doc["terrain"].get("seed") == info.get("seed"),
              "the world's %s link (%s) is its TileJSON document, valid against the schema" % (style, ref))
    if "openapi" in links:
        status, h, body = get(urllib.parse.urljoin(world_url, links["openapi"]))
        doc = json.loads(body) if status == 200 else {}
        check(status == 200 and doc.get("openapi", "").startswith("3.") and "/v1/worlds/{seed}" in doc.get("paths", {}),
              "the world's openapi link (%s) is the OpenAPI document that describes it" % links["openapi"])
    if FAILS:
        print("%d failed" % len(FAILS))
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
