#!/bin/bash
# doc_versions.sh - the words name the tile format versions the code writes
# and reads: scripts/check-versions.sh against $BUILD (terrain-server
# generate's version field beside common/tile.h, and the versions named by
# both --help texts, README.md, docs/tile-format.md, docs/library.md and the
# server's headers). Bumping TILE_VERSION without the words fails here.
# The words are the same in every build, so it runs in the first pass only.
# run: once
. "$(dirname "$0")/../lib/lib.sh"

check "the tile format versions named match the code (scripts/check-versions.sh)" \
	"$(dirname "$0")/../../scripts/check-versions.sh" "$BUILD"
finish
