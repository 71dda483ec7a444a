#!/bin/sh
# man.sh - a man page with its --help part made again from the program:
#   tools/man.sh PAGE PROGRAM > NEW_PAGE
# PAGE (dist/man/NAME.1, man(7)) is written by hand but for the lines
# between '.\" BEGIN --help' and '.\" END --help', which become PROGRAM
# --help in man(7), and the .TH line's version, which becomes PROGRAM
# --version's. `make man` rewrites dist/man/*.1 with it, and
# tests/platform/install.sh fails when a page differs from what it gives,
# so the pages say what --help says.
#
# The help's shapes (options.c's usage, client-sample/main.c's usage):
# the usage block up to its first blank line stays as it is (.nf);
# " heading:" is a subsection; "  --flag ARG  text" with its "env ..."
# line below is a tagged paragraph; "  terrain-client CMD ..." with its
# "      [--more]" lines is a tag over the indented text that follows;
# anything else is filled text, a blank line a new paragraph.
set -eu
page=$1 prog=$2
version=$("$prog" --version | sed -n '1s/^[^ ]* //p')
help=$(mktemp)
trap 'rm -f "$help"' EXIT
"$prog" --help >"$help"

convert() {
	awk '
	function esc(s) {
		gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
		if (s ~ /^[.\047]/) s = "\\&" s
		return s
	}
	# the usage block
	NR == 1 { print ".nf"; usage = 1 }
	usage && /^$/ { print ".fi"; print ".PP"; usage = 0; next }
	usage { print esc($0); next }
	function endrs() { if (inrs) print ".RE"; inrs = 0 }
	/^$/ { endrs(); print ".PP"; mode = ""; next }
	/^ [^ ].*:$/ { sub(/^ /, ""); sub(/:$/, ""); print ".SS \"" esc($0) "\""; mode = ""; next }
	# an option: flag and argument, then its text
	/^  --/ {
		line = substr($0, 3)
		if (match(line, /  +[^ ]/)) {
			flag = substr(line, 1, RSTART - 1); text = substr(line, RSTART + RLENGTH - 1)
		} else { flag = line; text = "" }
		n = split(flag, w, " ")
		tag = "\\fB" esc(w[1]) "\\fR"
		for (i = 2; i <= n; i++) tag = tag " \\fI" esc(w[i]) "\\fR"
		print ".TP"; print tag
		if (text != "") print esc(text)
		mode = "opt"; next
	}
	mode == "opt" && /^ +env / { sub(/^ +/, ""); print ".br"; print esc($0); next }
	# a command: its synopsis lines, unfilled, then its text indented
	/^  [a-z]/ {
		sub(/^  /, ""); endrs(); print ".PP"; print ".nf"; print "\\fB" esc($0) "\\fR"
		mode = "syn"; next
	}
	mode == "syn" && /^      [-[]/ { sub(/^ +/, ""); print "\\fB  " esc($0) "\\fR"; next }
	mode == "syn" { print ".fi"; print ".RS"; inrs = 1; mode = "text" }
	{ sub(/^ +/, ""); print esc($0) }
	END { endrs() }
	' "$help"
}

awk -v version="$version" '
	/^\.TH / { n = split($0, f, "\""); $0 = f[1] "\"" f[2] "\"" f[3] "\"terrain " version "\"" f[5] "\"" f[6] "\"" f[7] }
	/^\.\\" END --help/ { skip = 0 }
	skip { next }
	{ print }
	/^\.\\" BEGIN --help/ { skip = 1; while ((getline l < "/dev/stdin") > 0) print l }
' "$page" <<EOF2
$(convert)
EOF2
