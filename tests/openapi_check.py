#!/usr/bin/env python3
"""openapi_check.py - server/assets/openapi.json against the running server.

Usage: openapi_check.py DOC ROUTES BASE [--token-base URL --token TOKEN]
                       [--snapshot-base URL --snapshot-world SEED]
  DOC            the OpenAPI document (server/assets/openapi.json)
  ROUTES         the output of `terrain-server routes`
  BASE           http://127.0.0.1:PORT of a server without an edit token
  --token-base   a server started with --edit-token TOKEN (for its 401s)
  --snapshot-base  a server restarted from a snapshot that holds edits of
                 world SEED (base > 0: for the 410s of history before it)

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
    against the documented schema (a JSON Schema 2020-12 subset).
Prints "ok: ..." / "FAIL: ..." lines; exits 1 when anything failed.
"""
import argparse
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

def request(base, method, url, headers=None, body=None):
    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request(method, url, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def norm_type(t):
    return ";".join(x.strip() for x in t.lower().split(";"))


MAGIC = {"application/vnd.terrain.tile": b"TRRN", "application/vnd.terrain.objects": b"TROB"}
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
        if ctype not in media:
            errs.append("Content-Type %r not in %s" % (ctype, list(content)))
        else:
            schema = media[ctype].get("schema", {})
            if ctype == "application/json":
                try:
                    doc = json.loads(body)
                except ValueError as e:
                    errs.append("body is not JSON: %s" % e)
                else:
                    errs += validate(doc, schema)
            elif ctype in MAGIC and "content-encoding" not in headers:
                if body[:4] != MAGIC[ctype]:
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
    global DOC
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("doc")
    ap.add_argument("routes")
    ap.add_argument("base")
    ap.add_argument("--token-base")
    ap.add_argument("--token")
    ap.add_argument("--snapshot-base")
    ap.add_argument("--snapshot-world")
    args = ap.parse_args()
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
