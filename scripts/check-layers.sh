#!/bin/bash
# check-layers.sh - server/'s modules include one another in one order
# (docs/design.md, "The server's modules: the tree"): a file includes only
# its own module's headers by name and the headers of the modules before
# its own in LAYERS by folder ("worlds/world.h"); no module includes an
# _int.h of another. Prints each include that breaks it; exit 1 if any.
#
#   scripts/check-layers.sh [SERVER_DIR]
set -u
dir=${1:-"$(dirname "$0")/../server"}
LAYERS="base http editlog gen worlds api tiles edits service"
rank() { local i=0 m; for m in $LAYERS; do [ "$m" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo -1; }
bad=0 n=0
for f in "$dir"/*/*.[ch]; do
	mod=$(basename "$(dirname "$f")")
	[ "$mod" = assets ] && continue
	me=$(rank "$mod")
	if [ "$me" -lt 0 ]; then
		echo "check-layers: $f: folder $mod is not in LAYERS ($LAYERS)"
		bad=1
		continue
	fi
	while IFS=: read -r line inc; do
		n=$((n + 1))
		case $inc in
		*/*)
			other=${inc%%/*}
			them=$(rank "$other")
			if [ "$them" -lt 0 ] || [ "$them" -ge "$me" ]; then
				echo "check-layers: $f:$line includes $inc: $other is not below $mod"
				bad=1
			elif [[ $inc == *_int.h ]]; then
				echo "check-layers: $f:$line includes $inc: another module's internals"
				bad=1
			fi ;;
		*)
			# a bare name: this module's own header, or common/'s
			if [ ! -f "$(dirname "$f")/$inc" ] && [ ! -f "$dir/../common/$inc" ] &&
				compgen -G "$dir/*/$inc" >/dev/null; then
				echo "check-layers: $f:$line includes \"$inc\" bare: name another module's header by its folder"
				bad=1
			fi ;;
		esac
	done < <(grep -n '^#include "' "$f" | sed 's/^\([0-9]*\):#include "\([^"]*\)".*/\1:\2/')
done
[ $bad = 0 ] && echo "check-layers: $n includes in layer order ($LAYERS)"
exit $bad
