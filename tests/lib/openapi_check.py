#!/usr/bin/env python3
"""openapi_check.py - server/assets/openapi.json against the running server.

Usage: openapi_check.py DOC ROUTES BASE [--token-base URL --token TOKEN]
                       [--snapshot-base URL --snapshot-world SEED] [--node NAME]
  DOC            the OpenAPI document (server/assets/openapi.json)
  ROUTES         the output of `terrain-server routes`
  BASE           http://127.0.0.1:PORT of a server without an edit token
  --token-base   a server started with --edit-token TOKEN (for its 401s)
  --snapshot-base  a server restarted from a snapshot that holds edits of
                 world SEED (base > 0: for the 410s of history before it)
  --node         the --node-name of every server: each answer's X-Terrain-Node

Checks, with the standard library only:
  - the served /v1/openapi.json is DOC, byte for byte;
  - the document's shape: OpenAPI 3.1, unique operationIds, every $ref
    resolves, path parameters declared exactly, only known schema keywords;
  - the route table and the document list the same methods on the same paths;
  - real answers: every operation is called with its documented examples
    (success expected), then with the cases below (errors, conditionals,
    content negotiation, the event stream); each answer's status must be
    documented for that operation, its required headers present and valid,
    its Content-Type one of the documented ones and a JSON body valid
    against the documented schema (a JSON Schema 2020-12 subset), after
    gzip decoding when it came gzip-coded;
  - every answer names the node (X-Terrain-Node) and repeats no header;
  - content codings (zstd, gzip, identity, the ?encoding=zstd frame, their
    ETags and 304s), versioned URLs (?v=: immutable, 302, 404, 400) and web
    maps (TileJSON, its template, PNG tiles of 256 x 256, the pyramid's
    edges), with the header values the document and docs/ describe.
Prints "ok: ..." / "FAIL: ..." lines; exits 1 when anything failed.
"""
import argparse
import gzip
import http.client
import json
import re
import sys
import urllib.parse

FAILS = []


def ok(msg):
    print("ok: " + msg)


def fail(msg):
    print("FAIL: " + msg)
    FAILS.append(msg)


# ---- the document -----------------------------------------------------------

DOC = None


def resolve(ref):
    if not ref.startswith("#/"):
        raise ValueError("non-local $ref " + ref)
    node = DOC
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def deref(node):
    while isinstance(node, dict) and "$ref" in node:
        node = resolve(node["$ref"])
    return node


SCHEMA_KEYWORDS = {
    "$ref", "type", "enum", "const", "properties", "required", "additionalProperties",
    "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "pattern", "minLength", "maxLength",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    # annotations
    "description", "title", "default", "example", "examples", "format",
    "contentMediaType", "contentSchema",
}


def walk_schemas(schema, where, out):
    """Every subschema of schema, with where it is, into out."""
    if not isinstance(schema, dict):
        out.append((where, schema))
        return
    out.append((where, schema))
    for k in ("properties",):
        for name, sub in schema.get(k, {}).items():
            walk_schemas(sub, "%s.%s.%s" % (where, k, name), out)
    for k in ("items", "additionalProperties", "not", "if", "then", "else", "contentSchema"):
        if isinstance(schema.get(k), dict):
            walk_schemas(schema[k], "%s.%s" % (where, k), out)
    for k in ("allOf", "anyOf", "oneOf", "prefixItems"):
        for i, sub in enumerate(schema.get(k, [])):
            walk_schemas(sub, "%s.%s[%d]" % (where, k, i), out)


# ---- a JSON Schema subset ----------------------------------------------------

def short(v):
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def is_type(v, t):
    return {
        "object": isinstance(v, dict), "array": isinstance(v, list),
        "string": isinstance(v, str), "boolean": isinstance(v, bool),
        "null": v is None,
        "integer": isinstance(v, int) and not isinstance(v, bool),
        "number": isinstance(v, (int, float)) and not isinstance(v, bool),
    }[t]


def validate(v, schema, path="$"):
    """The errors of v against schema, as a list of strings."""
    if schema is True or schema == {}:
        return []
    if schema is False:
        return ["%s: not allowed" % path]
    if "$ref" in schema:
        errs = validate(v, resolve(schema["$ref"]), path)
        rest = {k: x for k, x in schema.items() if k != "$ref"}
        return errs + (validate(v, rest, path) if rest else [])
    errs = []
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(is_type(v, x) for x in types):
            return ["%s: %s is not of type %s" % (path, short(v), t)]
    if "const" in schema and v != schema["const"]:
        errs.append("%s: %s is not %r" % (path, short(v), schema["const"]))
    if "enum" in schema and v not in schema["enum"]:
        errs.append("%s: %s not in %r" % (path, short(v), schema["enum"]))
    if is_type(v, "number"):
        if "minimum" in schema and v < schema["minimum"]:
            errs.append("%s: %r < minimum %r" % (path, v, schema["minimum"]))
        if "maximum" in schema and v > schema["maximum"]:
            errs.append("%s: %r > maximum %r" % (path, v, schema["maximum"]))
        if "exclusiveMinimum" in schema and v <= schema["exclusiveMinimum"]:
            errs.append("%s: %r <= exclusiveMinimum" % (path, v))
        if "exclusiveMaximum" in schema and v >= schema["exclusiveMaximum"]:
            errs.append("%s: %r >= exclusiveMaximum" % (path, v))
    if isinstance(v, str):
        if "pattern" in schema and not re.search(schema["pattern"], v):
            errs.append("%s: %s does not match %s" % (path, short(v), schema["pattern"]))
        if "minLength" in schema and len(v) < schema["minLength"]:
            errs.append("%s: shorter than %d" % (path, schema["minLength"]))
        if "maxLength" in schema and len(v) > schema["maxLength"]:
            errs.append("%s: longer than %d" % (path, schema["maxLength"]))
        if schema.get("contentMediaType") == "application/json" and "contentSchema" in schema:
            try:
                inner = json.loads(v)
            except ValueError as e:
                errs.append("%s: not JSON (%s)" % (path, e))
            else:
                errs += validate(inner, schema["contentSchema"], path + "<json>")
    if isinstance(v, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in v:
                errs.append("%s: missing %s" % (path, name))
        for name, x in v.items():
            if name in props:
                errs += validate(x, props[name], "%s.%s" % (path, name))
            elif "additionalProperties" in schema:
                errs += validate(x, schema["additionalProperties"], "%s.%s" % (path, name))
    if isinstance(v, list):
        if "minItems" in schema and len(v) < schema["minItems"]:
            errs.append("%s: fewer than %d items" % (path, schema["minItems"]))
        if "maxItems" in schema and len(v) > schema["maxItems"]:
            errs.append("%s: more than %d items" % (path, schema["maxItems"]))
        prefix = schema.get("prefixItems", [])
        for i, x in enumerate(v):
            if i < len(prefix):
                errs += validate(x, prefix[i], "%s[%d]" % (path, i))
            elif "items" in schema:
                errs += validate(x, schema["items"], "%s[%d]" % (path, i))
    for sub in schema.get("allOf", []):
        errs += validate(v, sub, path)
    if "anyOf" in schema and not any(not validate(v, s, path) for s in schema["anyOf"]):
        errs.append("%s: matches none of anyOf" % path)
    if "oneOf" in schema:
        n = sum(1 for s in schema["oneOf"] if not validate(v, s, path))
        if n != 1:
            errs.append("%s: matches %d of oneOf, not 1" % (path, n))
    if "not" in schema and not validate(v, schema["not"], path):
        errs.append("%s: matches its not" % path)
    if "if" in schema and not validate(v, schema["if"], path):
        errs += validate(v, schema.get("then", True), path)
    elif "if" in schema:
        errs += validate(v, schema.get("else", True), path)
    return errs


# ---- structure ---------------------------------------------------------------

METHODS = ("get", "head", "post", "put", "delete", "patch", "options")


def operations():
    for path, item in DOC["paths"].items():
        for m in METHODS:
            if m in item:
                yield path, m, item[m]


def op_params(path, op):
    """The operation's parameters: the path item's, overridden by its own."""
    params = {}
    for p in DOC["paths"][path].get("parameters", []) + op.get("parameters", []):
        p = deref(p)
        params[(p["name"], p["in"])] = p
    return list(params.values())


def check_structure():
    if DOC.get("openapi", "").startswith("3.1."):
        ok("the document is OpenAPI 3.1 (%s)" % DOC["openapi"])
    else:
        fail("openapi is %r, not 3.1.x" % DOC.get("openapi"))
    if DOC.get("info", {}).get("title") and DOC["info"].get("version"):
        ok("info has a title and a version")
    else:
        fail("info needs a title and a version")
    refs = []

    def find_refs(node):
        if isinstance(node, dict):
            for k, x in node.items():
                if k == "$ref":
                    refs.append(x)
                else:
                    find_refs(x)
        elif isinstance(node, list):
            for x in node:
                find_refs(x)
    find_refs(DOC)
    bad = []
    for r in refs:
        try:
            resolve(r)
        except (KeyError, ValueError):
            bad.append(r)
    (fail if bad else ok)("every $ref resolves (%d refs)%s" % (len(refs), " but %s" % bad if bad else ""))
    ids = [op.get("operationId") for _, _, op in operations()]
    dup = {i for i in ids if ids.count(i) > 1}
    (fail if None in ids or dup else ok)("operationIds are present and unique (%d)" % len(ids))
    missing = []
    for path, m, op in operations():
        if not op.get("responses") or not op.get("summary"):
            missing.append("%s %s" % (m, path))
        want = set(re.findall(r"\{([^}]+)\}", path))
        got = {p["name"] for p in op_params(path, op) if p["in"] == "path"}
        if want != got or not all(p.get("required") for p in op_params(path, op) if p["in"] == "path"):
            missing.append("%s %s: path parameters %s, declared %s" % (m, path, want, got))
    (fail if missing else ok)("every operation has a summary, responses and its path parameters%s"
                              % (": %s" % missing if missing else ""))
    subs = []
    for name, s in DOC["components"]["schemas"].items():
        walk_schemas(s, "schemas." + name, subs)
    for path, m, op in operations():
        for p in op_params(path, op):
            walk_schemas(p["schema"], "%s %s %s" % (m, path, p["name"]), subs)
        for code, r in op["responses"].items():
            for ct, media in deref(r).get("content", {}).items():
                walk_schemas(media.get("schema", {}), "%s %s %s %s" % (m, path, code, ct), subs)
                if "x-itemSchema" in media:
                    walk_schemas(media["x-itemSchema"], "%s %s %s items" % (m, path, code), subs)
    for h in DOC["components"]["headers"].values():
        walk_schemas(h["schema"], "header", subs)
    unknown = sorted({"%s: %s" % (w, k) for w, s in subs if isinstance(s, dict)
                      for k in s if k not in SCHEMA_KEYWORDS})
    (fail if unknown else ok)("schemas use only keywords this checker knows%s"
                              % (": %s" % unknown if unknown else ""))
    bare = ["responses." + name for name, r in DOC["components"]["responses"].items()
            if "X-Terrain-Node" not in r.get("headers", {})]
    bare += ["%s %s %s" % (m, path, code) for path, m, op in operations()
             for code, r in op["responses"].items()
             if "$ref" not in r and "X-Terrain-Node" not in r.get("headers", {})]
    (fail if bare else ok)("every response declares X-Terrain-Node%s"
                           % (": not %s" % bare if bare else ""))


def check_routes(routes_text):
    table = set()
    for line in routes_text.splitlines():
        methods, path, _label = line.split()
        for m in methods.split(","):
            table.add((m, path))
    doc = {(m.upper(), re.sub(r"\{[^}]+\}", "*", path)) for path, m, _ in operations()}
    if table == doc:
        ok("the route table and the document list the same %d method-path pairs" % len(doc))
    else:
        fail("routes not in the document: %s; in the document, not routes: %s"
             % (sorted(table - doc), sorted(doc - table)))


# ---- requests ----------------------------------------------------------------

NODE = None  # --node: the X-Terrain-Node every answer must carry


def check_head_lines(what, pairs):
    """X-Terrain-Node is the node's name; no header comes twice."""
    names = [k.lower() for k, _ in pairs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        fail("%s: headers sent more than once: %s" % (what, dup))
    node = [v for k, v in pairs if k.lower() == "x-terrain-node"]
    if NODE is not None and node != [NODE]:
        fail("%s: X-Terrain-Node %r, want %r" % (what, node, NODE))


def request(base, method, url, headers=None, body=None):
    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request(method, url, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    check_head_lines("%s %s" % (method, url), r.getheaders())
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def norm_type(t):
    return ";".join(x.strip() for x in t.lower().split(";"))


MAGIC = {"application/vnd.terrain.tile": b"TRRN", "application/vnd.terrain.objects": b"TROB",
         "application/vnd.terrain.bundle": b"TRBN", "application/zstd": b"\x28\xb5\x2f\xfd",
         "image/png": b"\x89PNG\r\n\x1a\n"}
SEEN = set()  # (path, method, status) answered and checked


def check_answer(what, path, method, status, headers, body):
    """The answer's status, headers and body against the operation."""
    op = DOC["paths"][path][method.lower()]
    r = op["responses"].get(str(status)) or op["responses"].get("default")
    if r is None:
        fail("%s: status %d is not documented for %s %s" % (what, status, method, path))
        return
    r = deref(r)
    errs = []
    for name, h in r.get("headers", {}).items():
        h = deref(h)
        value = headers.get(name.lower())
        if value is None:
            if h.get("required"):
                errs.append("header %s missing" % name)
            continue
        errs += ["header " + e for e in validate(value, h.get("schema", {}), name)]
    content = r.get("content")
    if body is None:
        pass  # a stream: check_events() reads it
    elif method == "HEAD" or status in (204, 304):
        if body:
            errs.append("a body of %d bytes" % len(body))
    elif not content:
        if body:
            errs.append("an undocumented body")
    else:
        ctype = norm_type(headers.get("content-type", ""))
        media = {norm_type(k): v for k, v in content.items()}
        coding = headers.get("content-encoding")
        if coding == "gzip":
            try:
                body = gzip.decompress(body)
                coding = None
            except (OSError, EOFError) as e:
                errs.append("the gzip body does not decode: %s" % e)
        if ctype not in media:
            errs.append("Content-Type %r not in %s" % (ctype, list(content)))
        elif coding == "zstd":
            if body[:4] != MAGIC["application/zstd"]:
                errs.append("the zstd-coded body is not a zstd frame")
        elif coding is not None:
            pass  # reported above
        else:
            schema = media[ctype].get("schema", {})
            if ctype == "application/json":
                try:
                    doc = json.loads(body)
                except ValueError as e:
                    errs.append("body is not JSON: %s" % e)
                else:
                    errs += validate(doc, schema)
            elif ctype in MAGIC:
                if not body.startswith(MAGIC[ctype]):
                    errs.append("body does not start with %r" % MAGIC[ctype])
            elif not body:
                errs.append("an empty body")
    if errs:
        fail("%s: %s %s -> %d: %s" % (what, method, path, status, "; ".join(errs[:6])))
    else:
        SEEN.add((path, method, status))
        ok("%s: %d as documented" % (what, status))


def example_url(path, op, extra_query=None):
    url = path
    query = []
    for p in op_params(path, op):
        if p["in"] == "path":
            url = url.replace("{%s}" % p["name"], urllib.parse.quote(str(p["example"]), safe=""))
        elif p["in"] == "query" and p.get("required"):
            query.append((p["name"], str(p["example"])))
    query += list((extra_query or {}).items())
    return url + ("?" + urllib.parse.urlencode(query) if query else "")


def call(base, what, path, method, url, headers=None, body=None, want=None):
    status, h, data = request(base, method, url, headers, body)
    if want is not None and status != want:
        fail("%s: %s %s gave %d, want %d: %s" % (what, method, url, status, want, data[:200]))
        return status, h, data
    check_answer(what, path, method, status, h, data)
    return status, h, data


def check_examples(base):
    """Each operation with its examples, then its conditional forms."""
    for path, m, op in operations():
        if path.endswith("/events") and m == "get":
            continue  # a stream: check_events()
        method = m.upper()
        url = example_url(path, op)
        what = "%s %s (example)" % (method, path)
        if m == "options":
            call(base, what, path, method, url, want=204)
            continue
        body, headers = None, {}
        if "requestBody" in op:
            media = op["requestBody"]["content"]["application/json"]
            errs = validate(media["example"], media["schema"])
            (fail if errs else ok)("%s: its request example fits its schema%s"
                                   % (what, ": %s" % errs if errs else ""))
            body = json.dumps(media["example"]).encode()
            headers = {"Content-Type": "application/json"}
        status, h, _ = call(base, what, path, method, url, headers, body, want=200)
        if status != 200 or method == "POST":
            continue
        if "304" in op["responses"] and "etag" in h:
            call(base, "%s If-None-Match" % what, path, method, url,
                 {"If-None-Match": h["etag"]}, want=304)
        names = {p["name"] for p in op_params(path, op)}
        if "If-Modified-Since" in names and "last-modified" in h:
            call(base, "%s If-Modified-Since" % what, path, method, url,
                 {"If-Modified-Since": h["last-modified"]}, want=304)


TILE = "/v1/worlds/{seed}/chunks/{lod}/{cx}/{cz}"
BATCH = "/v1/worlds/{seed}/chunks/{lod}"
OBJECTS = "/v1/worlds/{seed}/objects/{cx}/{cz}"
WORLD = "/v1/worlds/{seed}"
EDITS = "/v1/worlds/{seed}/edits"
HASHES = "/v1/worlds/{seed}/hashes"
EVENTS = "/v1/worlds/{seed}/events"
ASSET = "/assets/{name}"
JSON_CT = {"Content-Type": "application/json"}
RAISE = json.dumps({"edits": [{"op": "raise", "x": 10, "z": 10, "radius": 5, "strength": 1}]})

# (what, template, method, url, headers, body, expected status)
CASES = [
    ("a seed above 2^64-1", TILE, "GET", "/v1/worlds/18446744073709551616/chunks/0/0/0", {}, None, 400),
    ("a text seed", TILE, "GET", "/v1/worlds/my-world/chunks/4/0/0", {}, None, 200),
    ("a LOD beyond the generator's", TILE, "GET", "/v1/worlds/42/chunks/99/0/0", {}, None, 400),
    ("cx not an int32", TILE, "GET", "/v1/worlds/42/chunks/0/2147483648/0", {}, None, 400),
    ("an unknown generator", TILE, "GET", "/v1/worlds/42/chunks/0/0/0?gen=nope", {}, None, 404),
    ("an unknown layer", TILE, "GET", "/v1/worlds/42/chunks/0/0/0?layers=rock", {}, None, 400),
    ("the material layer", TILE, "GET", "/v1/worlds/42/chunks/3/0/0?layers=height,material&gen=alpine", {}, None, 200),
    ("a zstd tile", TILE, "GET", "/v1/worlds/42/chunks/3/0/0", {"Accept-Encoding": "zstd"}, None, 200),
    ("a zstd tile's HEAD", TILE, "HEAD", "/v1/worlds/42/chunks/3/0/0", {"Accept-Encoding": "zstd"}, None, 200),
    ("a rectangle over 64 tiles", BATCH, "GET", "/v1/worlds/42/chunks/4?cx0=0&cz0=0&cx1=8&cz1=7", {}, None, 400),
    ("a rectangle without its corners", BATCH, "GET", "/v1/worlds/42/chunks/4", {}, None, 400),
    ("a zstd bundle", BATCH, "GET", "/v1/worlds/42/chunks/4?cx0=0&cz0=0&cx1=1&cz1=1", {"Accept-Encoding": "zstd"}, None, 200),
    ("binary objects", OBJECTS, "GET", "/v1/worlds/42/objects/1/0", {"Accept": "application/vnd.terrain.objects"}, None, 200),
    ("objects of a bad cz", OBJECTS, "GET", "/v1/worlds/42/objects/1/z", {}, None, 400),
    ("objects of an unknown generator", OBJECTS, "GET", "/v1/worlds/42/objects/1/0?gen=nope", {}, None, 404),
    ("a world of a bad seed", WORLD, "GET", "/v1/worlds/bad.seed", {}, None, 400),
    ("a world of an unknown generator", WORLD, "GET", "/v1/worlds/42?gen=nope", {}, None, 404),
    ("another generator's world", WORLD, "GET", "/v1/worlds/42?gen=eroded", {}, None, 200),
    ("edits: a second batch", EDITS, "POST", "/v1/worlds/42/edits", JSON_CT,
     json.dumps({"edits": [{"op": "flatten", "x": -5, "z": 7, "radius": 3, "strength": 0.5,
                            "height": 12, "falloff": "linear"},
                           {"op": "set", "x": 600, "z": 600, "radius": 2, "height": -3}]}), 200),
    ("edits: a page cut by limit", EDITS, "GET", "/v1/worlds/42/edits?since=0&limit=1", {}, None, 200),
    ("edits: since beyond the log", EDITS, "GET", "/v1/worlds/42/edits?since=999999", {}, None, 200),
    ("edits: a bad since", EDITS, "GET", "/v1/worlds/42/edits?since=x", {}, None, 400),
    ("edits: limit 0", EDITS, "GET", "/v1/worlds/42/edits?limit=0", {}, None, 400),
    ("edits: bad JSON", EDITS, "POST", "/v1/worlds/42/edits", JSON_CT, "{", 400),
    ("edits: a field the op does not use", EDITS, "POST", "/v1/worlds/42/edits", JSON_CT,
     json.dumps({"edits": [{"op": "set", "x": 1, "z": 1, "radius": 1, "height": 1, "strength": 1}]}), 400),
    ("edits: not JSON", EDITS, "POST", "/v1/worlds/42/edits", {"Content-Type": "text/plain"}, RAISE, 415),
    ("edits: a radius out of range", EDITS, "POST", "/v1/worlds/42/edits", JSON_CT,
     json.dumps({"edits": [{"op": "raise", "x": 1, "z": 1, "radius": 5000, "strength": 1}]}), 422),
    ("edits: a page of another origin", EDITS, "POST", "/v1/worlds/42/edits",
     {"Content-Type": "application/json", "Origin": "http://evil.example"}, RAISE, 403),
    ("edits: an unknown generator", EDITS, "POST", "/v1/worlds/42/edits?gen=nope", JSON_CT, RAISE, 404),
    ("edits: a body over 64 KiB", EDITS, "POST", "/v1/worlds/42/edits", JSON_CT, " " * 70000 + RAISE, 413),
    ("hashes of an edited world", HASHES, "GET", "/v1/worlds/42/hashes?cx0=-1&cz0=-1&cx1=2&cz1=2", {}, None, 200),
    ("hashes of a rectangle too large", HASHES, "GET", "/v1/worlds/42/hashes?cx0=0&cz0=0&cx1=64&cz1=0", {}, None, 400),
    ("hashes without a rectangle", HASHES, "GET", "/v1/worlds/42/hashes", {}, None, 400),
    ("events with a bad Last-Event-ID", EVENTS, "GET", "/v1/worlds/42/events", {"Last-Event-ID": "x"}, None, 400),
    ("events of an unknown generator", EVENTS, "GET", "/v1/worlds/42/events?gen=nope", {}, None, 404),
    ("an asset that does not exist", ASSET, "GET", "/assets/nope.js", {}, None, 404),
    ("the viewer's stylesheet", ASSET, "GET", "/assets/style.css", {}, None, 200),
    ("this document as an asset", ASSET, "GET", "/assets/openapi.json", {}, None, 200),
]


def check_cases(base):
    for what, path, method, url, headers, body, want in CASES:
        call(base, what, path, method, url, headers, body and body.encode(), want)


def check_global(base):
    """What the info's description promises every route."""
    status, h, data = request(base, "POST", "/v1/presets")
    errs = validate(json.loads(data or b"null"), DOC["components"]["schemas"]["Error"])
    if status == 405 and "OPTIONS" in h.get("allow", "") and not errs:
        ok("a method a route does not take: 405 with Allow and the JSON error")
    else:
        fail("POST /v1/presets gave %d, Allow %r, %s" % (status, h.get("allow"), errs))
    status, h, data = request(base, "GET", "/no/such/route")
    errs = validate(json.loads(data or b"null"), DOC["components"]["schemas"]["Error"])
    (ok if status == 404 and not errs else fail)("no such route: 404 with the JSON error")


def read_event(resp):
    """The next event of an SSE response, as {field: value}; comments skipped."""
    ev = {}
    while True:
        line = resp.readline().decode()
        if not line:
            return ev or None
        line = line.rstrip("\n")
        if line == "":
            if ev:
                return ev
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        ev[name] = value[1:] if value.startswith(" ") else value


def check_events(base):
    u = urllib.parse.urlsplit(base)
    media = DOC["paths"][EVENTS]["get"]["responses"]["200"]["content"]["text/event-stream"]
    item = media["x-itemSchema"]
    for resume in (False, True):
        what = "the event stream" + (" resumed with Last-Event-ID: 0" if resume else "")
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
        headers = {"Last-Event-ID": "0"} if resume else {}
        conn.request("GET", "/v1/worlds/sse-check/events", headers=headers)
        resp = conn.getresponse()
        check_head_lines(what, resp.getheaders())
        h = {k.lower(): v for k, v in resp.getheaders()}
        check_answer(what + " (head)", EVENTS, "GET", resp.status, h, None)
        if norm_type(h.get("content-type", "")) != "text/event-stream":
            fail("%s: Content-Type %r" % (what, h.get("content-type")))
        if not resume:
            status, _, data = request(base, "POST", "/v1/worlds/sse-check/edits", JSON_CT, RAISE.encode())
            if status != 200:
                fail("%s: the edit was refused: %s" % (what, data))
        ev = read_event(resp)
        conn.close()
        if ev is None:
            fail("%s: no event came" % what)
            continue
        errs = validate(ev, item)
        if not errs and ev["id"] != str(json.loads(ev["data"])["last_seq"]):
            errs.append("id %s is not the batch's last_seq" % ev["id"])
        (fail if errs else ok)("%s: an event fits the documented item schema%s"
                               % (what, ": %s" % errs if errs else ""))
    SEEN.add((EVENTS, "GET", 200))


def check_token(token_base, token):
    call(token_base, "edits without the token", EDITS, "POST", "/v1/worlds/42/edits",
         JSON_CT, RAISE.encode(), 401)
    call(token_base, "edits with a wrong token", EDITS, "POST", "/v1/worlds/42/edits",
         dict(JSON_CT, Authorization="Bearer wrong"), RAISE.encode(), 401)
    call(token_base, "edits with the token", EDITS, "POST", "/v1/worlds/42/edits",
         dict(JSON_CT, Authorization="Bearer " + token), RAISE.encode(), 200)


def check_snapshot(snap_base, seed):
    status, _, data = request(snap_base, "GET", "/v1/worlds/%s" % seed)
    base = json.loads(data).get("base", 0) if status == 200 else 0
    if base <= 0:
        fail("the snapshot server's world %s has base %s, not above 0" % (seed, base))
        return
    ok("the snapshot server's world has base %d" % base)
    for method in ("GET", "HEAD"):
        call(snap_base, "edits before the snapshot", EDITS, method,
             "/v1/worlds/%s/edits?since=0" % seed, want=410)
    call(snap_base, "edits from the snapshot on", EDITS, "GET",
         "/v1/worlds/%s/edits?since=%d" % (seed, base), want=200)
    call(snap_base, "events resumed before the snapshot", EVENTS, "GET",
         "/v1/worlds/%s/events" % seed, {"Last-Event-ID": "0"}, want=410)

# ---- content codings, versioned URLs, web maps ------------------------------------

MAPDOC = "/v1/worlds/{seed}/maps/{style}"
MAPTILE = "/v1/worlds/{seed}/maps/{style}/{z}/{x}/{y}"
IMMUTABLE = "public, max-age=31536000, immutable"


def expect(what, h, want):
    """The answer's headers h against want: name -> value, None (absent)
    or a compiled pattern it must match whole."""
    errs = []
    for name, w in want.items():
        got = h.get(name.lower())
        if w is None:
            if got is not None:
                errs.append("%s: %r, want none" % (name, got))
        elif isinstance(w, str):
            if got != w:
                errs.append("%s: %r, want %r" % (name, got, w))
        elif got is None or not w.fullmatch(got):
            errs.append("%s: %r, want /%s/" % (name, got, w.pattern))
    (fail if errs else ok)("%s: %s" % (what, "; ".join(errs) if errs else
                                       "headers as described (%s)" % ", ".join(want)))


def tag_of(h):
    """The 16 hex digits of the answer's ETag, or None."""
    m = re.fullmatch(r'"([0-9a-f]{16})(-z|-g)?"', h.get("etag", ""))
    return m.group(1) if m else None


def check_codings(base):
    """docs/codings.md: the coding each Accept-Encoding gets, its tag, the
    frame form, 304 per coding; objects and bundles."""
    url = "/v1/worlds/42/chunks/3/1/1"
    st, h, ident = call(base, "identity tile", TILE, "GET", url, want=200)
    hexd = tag_of(h)
    expect("identity tile", h, {"Content-Encoding": None, "ETag": '"%s"' % hexd,
                                "Vary": "Accept-Encoding"})
    _, h, zbody = call(base, "zstd tile", TILE, "GET", url, {"Accept-Encoding": "zstd"}, want=200)
    expect("zstd tile", h, {"Content-Encoding": "zstd", "ETag": '"%s-z"' % hexd,
                            "Vary": "Accept-Encoding"})
    for ae, coding in (("gzip", "gzip"), ("gzip, deflate", "gzip"), ("x-gzip", "gzip"),
                       ("deflate, gzip, br, zstd", "zstd"), ("gzip, zstd;q=0.5", "gzip"),
                       ("zstd;q=0, *", "gzip"), ("gzip;q=0.5, identity", None),
                       ("br", None), ("identity", None)):
        what = "Accept-Encoding %r" % ae
        _, h, data = call(base, what, TILE, "GET", url, {"Accept-Encoding": ae}, want=200)
        suffix = {"zstd": "-z", "gzip": "-g", None: ""}[coding]
        expect(what, h, {"Content-Encoding": coding, "ETag": '"%s%s"' % (hexd, suffix),
                         "Vary": "Accept-Encoding"})
        if coding == "gzip":
            (ok if gzip.decompress(data) == ident else fail)(
                "%s: the gzip body decodes to the identity tile" % what)
    call(base, "a gzip tag asked with zstd: 200, not 304", TILE, "GET", url,
         {"Accept-Encoding": "zstd", "If-None-Match": '"%s-g"' % hexd}, want=200)
    _, h, _ = call(base, "the gzip tag asked with gzip", TILE, "GET", url,
                   {"Accept-Encoding": "gzip", "If-None-Match": '"%s-g"' % hexd}, want=304)
    expect("the gzip 304", h, {"ETag": '"%s-g"' % hexd, "Vary": "Accept-Encoding"})
    for ae in ("", "gzip"):
        what = "?encoding=zstd (Accept-Encoding %r)" % ae
        _, h, data = call(base, what, TILE, "GET", url + "?encoding=zstd",
                          {"Accept-Encoding": ae} if ae else {}, want=200)
        expect(what, h, {"Content-Type": "application/zstd", "Content-Encoding": None,
                         "Vary": None, "ETag": '"%s-z"' % hexd})
        (ok if data == zbody else fail)("%s: the body is the zstd coding's frame" % what)
    _, h, _ = call(base, "?encoding=zstd HEAD", TILE, "HEAD", url + "?encoding=zstd", want=200)
    expect("?encoding=zstd HEAD", h, {"Content-Length": str(len(zbody))})
    call(base, "?encoding=zstd revalidated", TILE, "GET", url + "?encoding=zstd",
         {"If-None-Match": '"%s-z"' % hexd}, want=304)
    for value in ("gzip", "", "ZSTD"):
        call(base, "?encoding=%s" % value, TILE, "GET", url + "?encoding=" + value, want=400)
    obj = "/v1/worlds/42/objects/2/1"
    _, h, _ = call(base, "gzip objects", OBJECTS, "GET", obj, {"Accept-Encoding": "gzip"}, want=200)
    expect("gzip objects", h, {"Content-Encoding": "gzip", "Vary": "Accept, Accept-Encoding",
                               "ETag": re.compile(r'"[0-9a-f]{16}-g"')})
    _, h, _ = call(base, "binary objects as the frame", OBJECTS, "GET", obj + "?encoding=zstd",
                   {"Accept": "application/vnd.terrain.objects"}, want=200)
    expect("objects as the frame", h, {"Content-Type": "application/zstd", "Vary": "Accept",
                                       "Content-Encoding": None})
    call(base, "objects ?encoding=br", OBJECTS, "GET", obj + "?encoding=br", want=400)
    rect = "/v1/worlds/42/chunks/4?cx0=0&cz0=0&cx1=1&cz1=1"
    _, h, _ = call(base, "a gzip-only client's bundle", BATCH, "GET", rect,
                   {"Accept-Encoding": "gzip"}, want=200)
    expect("a gzip-only client's bundle: identity", h, {"Content-Encoding": None,
                                                        "Vary": "Accept-Encoding",
                                                        "ETag": re.compile(r'"[0-9a-f]{16}"')})
    _, h, _ = call(base, "a bundle as the frame", BATCH, "GET", rect + "&encoding=zstd", want=200)
    expect("a bundle as the frame", h, {"Content-Type": "application/zstd", "Vary": None,
                                        "Content-Encoding": None,
                                        "ETag": re.compile(r'"[0-9a-f]{16}-z"')})


def check_versions(base):
    """docs/edits.md, Versioned tile URLs, on a world of its own."""
    w = "/v1/worlds/v-check"
    t00, t55 = w + "/chunks/3/0/0", w + "/chunks/3/5/5"
    _, h, _ = call(base, "?v=0 of a world without edits", TILE, "GET", t00 + "?v=0", want=200)
    expect("?v=0 of a world without edits", h, {"Cache-Control": IMMUTABLE})
    _, h, _ = call(base, "?v=1 beyond a world without edits", TILE, "GET", t00 + "?v=1", want=404)
    expect("?v=1 beyond a world without edits", h, {"Cache-Control": "no-store"})
    st, _, data = request(base, "POST", w + "/edits", JSON_CT, RAISE.encode())
    seq = json.loads(data).get("last_seq") if st == 200 else None
    if seq != 1:
        fail("the versioned world's first edit: %d %s" % (st, data[:200]))
        return
    _, h, body = call(base, "?v= current", TILE, "GET", t00 + "?v=1", want=200)
    expect("?v= current", h, {"Cache-Control": IMMUTABLE, "X-Cache": re.compile("hit|miss")})
    _, plain_h, plain = call(base, "the same tile without v", TILE, "GET", t00, want=200)
    (ok if body == plain and h.get("etag") == plain_h.get("etag") else fail)(
        "?v= current: the bytes and ETag of the URL without v")
    _, h, _ = call(base, "?v= current revalidated", TILE, "GET", t00 + "?v=1",
                   {"If-None-Match": h.get("etag", "")}, want=304)
    expect("?v= current revalidated", h, {"Cache-Control": IMMUTABLE})
    _, h, _ = call(base, "?v= current as the frame", TILE, "GET", t00 + "?encoding=zstd&v=1",
                   want=200)
    expect("?v= current as the frame", h, {"Cache-Control": IMMUTABLE,
                                           "Content-Type": "application/zstd"})
    for method in ("GET", "HEAD"):
        what = "?v= older (%s)" % method
        _, h, data = call(base, what, TILE, method, t00 + "?gen=default&v=0", want=302)
        expect(what, h, {"Location": w + "/chunks/3/0/0?gen=default&v=1",
                         "Cache-Control": "no-cache", "X-Cache": None, "ETag": None})
        if method == "GET" and json.loads(data) != {"version": 1}:
            fail("%s: body %r" % (what, data))
    _, h, _ = call(base, "?v= later, the chunk unchanged", TILE, "GET", t55 + "?v=1", want=302)
    expect("?v= later, the chunk unchanged", h, {"Location": w + "/chunks/3/5/5?v=0"})
    _, h, data = call(base, "?v= beyond edit_seq", TILE, "GET", t00 + "?v=2", want=404)
    expect("?v= beyond edit_seq", h, {"Cache-Control": "no-store"})
    if not (re.search(rb"\b2\b", data) and re.search(rb"\b1\b", data)):
        fail("?v= beyond edit_seq: the detail does not name both numbers: %r" % data)
    for v in ("x", "-1", "", "18446744073709551616"):
        _, h, _ = call(base, "?v=%s" % v, TILE, "GET", t00 + "?v=" + v, want=400)
    rect = w + "/chunks/3?cx0=0&cz0=0&cx1=1&cz1=0"
    _, h, _ = call(base, "a bundle's ?v= current", BATCH, "GET", rect + "&v=1", want=200)
    expect("a bundle's ?v= current", h, {"Cache-Control": IMMUTABLE})
    _, h, _ = call(base, "a bundle's ?v= current revalidated", BATCH, "GET", rect + "&v=1",
                   {"If-None-Match": h.get("etag", "")}, want=304)
    expect("a bundle's ?v= current revalidated", h, {"Cache-Control": IMMUTABLE})
    _, h, _ = call(base, "a bundle's ?v= older", BATCH, "HEAD", rect + "&v=0", want=302)
    expect("a bundle's ?v= older", h, {"Location": rect + "&v=1"})
    call(base, "a bundle's ?v= beyond", BATCH, "GET", rect + "&v=5", want=404)
    _, h, _ = call(base, "objects beside the edit, ?v= current", OBJECTS, "GET",
                   w + "/objects/1/1?v=1", want=200)
    expect("objects beside the edit, ?v= current", h, {"Cache-Control": IMMUTABLE})
    _, h, _ = call(base, "objects away from it, ?v=1", OBJECTS, "GET", w + "/objects/2/2?v=1",
                   want=302)
    expect("objects away from it, ?v=1", h, {"Location": w + "/objects/2/2?v=0"})
    call(base, "objects ?v= beyond", OBJECTS, "GET", w + "/objects/0/0?v=3", want=404)
    call(base, "objects ?v= not a number", OBJECTS, "GET", w + "/objects/0/0?v=1.0", want=400)


def png_size(data):
    """(width, height, bit depth, colour type) of a PNG's IHDR."""
    if data[:8] != MAGIC["image/png"] or data[12:16] != b"IHDR":
        return None
    return (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big"),
            data[24], data[25])


def check_maps(base):
    """docs/maps.md: the TileJSON and its template, PNG tiles, the pyramid's
    edges and the errors."""
    netloc = urllib.parse.urlsplit(base).netloc
    _, h, data = call(base, "TileJSON terrarium", MAPDOC, "GET", "/v1/worlds/42/maps/terrarium",
                      want=200)
    tj = json.loads(data or b"{}")
    _, h2, data2 = call(base, "TileJSON terrarium.json", MAPDOC, "GET",
                        "/v1/worlds/42/maps/terrarium.json", want=200)
    (ok if data2 == data and h2.get("etag") == h.get("etag") else fail)(
        "terrarium.json is the same document")
    expect("TileJSON", h, {"Vary": "Host, Forwarded", "Cache-Control": "no-cache"})
    template = (tj.get("tiles") or [""])[0]
    want = "http://%s/v1/worlds/42/maps/terrarium/{z}/{x}/{y}.png?gen=default" % netloc
    (ok if template == want else fail)("the template names this server: %s" % template)
    for z in (tj.get("maxzoom", 17), tj.get("minzoom", 9)):
        n = 1 << (z - 1)
        u = urllib.parse.urlsplit(template.replace("{z}", str(z)).replace("{x}", str(n))
                                  .replace("{y}", str(n)))
        what = "the template's tile at zoom %d" % z
        _, h, png = call(base, what, MAPTILE, "GET", u.path + "?" + u.query, want=200)
        (ok if png_size(png) == (256, 256, 8, 2) else fail)(
            "%s: a 256 x 256 8-bit RGB PNG (%s)" % (what, png_size(png)))
        expect(what, h, {"Vary": None, "X-Cache": re.compile("hit|miss"),
                         "Cache-Control": re.compile(r"public, max-age=[0-9]+|no-cache")})
    _, h, data = call(base, "TileJSON shaded, alpine, an origin", MAPDOC, "GET",
                      "/v1/worlds/42/maps/shaded.json?gen=alpine&origin=3,-4", want=200)
    tj = json.loads(data or b"{}")
    terrain = tj.get("terrain", {})
    c = terrain.get("chunk_size", 0)
    good = (tj.get("tiles", [""])[0].endswith("/maps/shaded/{z}/{x}/{y}.png?gen=alpine&origin=3,-4")
            and terrain.get("origin_chunk") == [3, -4] and terrain.get("origin_m") == [3 * c, -4 * c]
            and terrain.get("generator") == "alpine")
    (ok if good else fail)("the shaded TileJSON keeps gen and origin: %s" % tj.get("tiles"))
    _, h, data = call(base, "TileJSON through a proxy", MAPDOC, "GET",
                      "/v1/worlds/my-world/maps/shaded",
                      {"Forwarded": "for=192.0.2.1;host=maps.example;proto=https"}, want=200)
    template = (json.loads(data or b"{}").get("tiles") or [""])[0]
    (ok if template.startswith("https://maps.example/v1/worlds/my-world/maps/shaded/") else fail)(
        "Forwarded host= and proto= name the template: %s" % template)
    edge = "/v1/worlds/42/maps/terrarium/17/%d/65536.png?origin=2147483647,0"
    call(base, "the grid's last chunk", MAPTILE, "GET", edge % 65536, want=200)
    call(base, "a tile beyond the grid", MAPTILE, "GET", edge % 65537, want=404)
    for what, path, url, headers, status in (
            ("TileJSON of a bad style", MAPDOC, "/v1/worlds/42/maps/contour", {}, 400),
            ("TileJSON .png", MAPDOC, "/v1/worlds/42/maps/terrarium.png", {}, 400),
            ("TileJSON of a bad origin", MAPDOC, "/v1/worlds/42/maps/terrarium?origin=1", {}, 400),
            ("TileJSON of a bad Host", MAPDOC, "/v1/worlds/42/maps/terrarium", {"Host": "a b"}, 400),
            ("TileJSON of an unknown generator", MAPDOC, "/v1/worlds/42/maps/shaded?gen=nope", {}, 404),
            ("TileJSON of a bad seed", MAPDOC, "/v1/worlds/bad.seed/maps/shaded", {}, 400),
            ("a map tile without .png", MAPTILE, "/v1/worlds/42/maps/shaded/16/32768/32768", {}, 200),
            ("a map tile of a bad style", MAPTILE, "/v1/worlds/42/maps/terrarium.json/17/0/0", {}, 400),
            ("a map tile of a bad z", MAPTILE, "/v1/worlds/42/maps/shaded/z/0/0.png", {}, 400),
            ("a map tile of a bad y", MAPTILE, "/v1/worlds/42/maps/shaded/17/0/0.jpg", {}, 400),
            ("a map tile of a bad origin", MAPTILE, "/v1/worlds/42/maps/shaded/17/0/0?origin=a,b", {}, 400),
            ("a zoom below the pyramid", MAPTILE, "/v1/worlds/42/maps/terrarium/8/0/0.png", {}, 404),
            ("a zoom above it", MAPTILE, "/v1/worlds/42/maps/terrarium/18/0/0.png", {}, 404),
            ("an eroded preset's zoom 14", MAPTILE, "/v1/worlds/42/maps/terrarium/14/0/0.png?gen=eroded", {}, 404),
            ("x not below 2^z", MAPTILE, "/v1/worlds/42/maps/terrarium/9/512/0.png", {}, 404),
            ("a map tile of an unknown generator", MAPTILE, "/v1/worlds/42/maps/shaded/17/0/0?gen=nope", {}, 404)):
        call(base, what, path, "GET", url, headers, want=status)


def check_coverage():
    missing = []
    for path, m, op in operations():
        want = 204 if m == "options" else 200
        if (path, m.upper(), want) not in SEEN:
            missing.append("%s %s %d" % (m.upper(), path, want))
    (fail if missing else ok)("every operation gave its documented success%s"
                              % (": missing %s" % missing if missing else ""))
    print("  %d operation-status pairs checked" % len(SEEN))


def main():
    global DOC, NODE
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("doc")
    ap.add_argument("routes")
    ap.add_argument("base")
    ap.add_argument("--token-base")
    ap.add_argument("--token")
    ap.add_argument("--snapshot-base")
    ap.add_argument("--snapshot-world")
    ap.add_argument("--node")
    args = ap.parse_args()
    NODE = args.node
    raw = open(args.doc, "rb").read()
    DOC = json.loads(raw)
    base = args.base
    status, h, served = request(base, "GET", "/v1/openapi.json")
    (ok if status == 200 and served == raw else fail)("GET /v1/openapi.json serves the document")
    check_structure()
    check_routes(open(args.routes).read())
    check_examples(base)
    check_cases(base)
    check_global(base)
    check_events(base)
    check_codings(base)
    check_versions(base)
    check_maps(base)
    if args.token_base:
        check_token(args.token_base, args.token)
    if args.snapshot_base:
        check_snapshot(args.snapshot_base, args.snapshot_world)
    check_coverage()
    if FAILS:
        print("%d failed" % len(FAILS))
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
