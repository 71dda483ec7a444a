#!/bin/bash
# layers.sh - server/'s modules include one another in the order of
# docs/design.md's tree (scripts/check-layers.sh): no include cycle between
# modules, no module reaching into another's internals. The sources are the
# same in every build, so it runs in the first pass only.
# run: once
. "$(dirname "$0")/../lib/lib.sh"

check "server/ includes follow the module layers (scripts/check-layers.sh)" \
	"$(dirname "$0")/../../scripts/check-layers.sh"
finish
