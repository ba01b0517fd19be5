#!/bin/sh
# SPDX-License-Identifier: MIT
# Each tool's man page and its --help agree: every option --help prints is
# a tag of the page's OPTIONS section, every such tag is an option --help
# prints, and groff renders the page without a warning.
# usage: man_pages.sh MAN_DIR TOOL...   (the page of TOOL: MAN_DIR/TOOL.1)
#
# --help's options: those on the usage lines (up to the first blank line)
# and those that start a line of its option table (indented 1 to 4 spaces;
# deeper lines continue a description, which may name other commands'
# options, as oxr-master's "srun -n 4 --mpi=pmix").
set -eu
man_dir=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/set_diff.sh"

if ! command -v groff >/dev/null; then
	echo "groff is not installed (Debian: groff-base)"
	exit 1
fi

# The option tokens (-n, --ranks, --no-control) of stdin, one a line, sorted.
options() {
	grep -oE '(^|[][ |,])--?[A-Za-z][A-Za-z0-9-]*' | sed -E 's/^[][ |,]//' | sort -u
}

help_options() {
	awk 'NR == 1, /^$/ { print; next }
	     match($0, /^ +-/) && RLENGTH <= 5 { sub(/^ +/, ""); sub(/  .*/, ""); print }' |
		options
}

# The tag lines (the line after .TP) of the page's OPTIONS section, as text.
page_options() {
	awk '/^\.SH/ { in_opts = ($2 == "OPTIONS") } in_opts && tag { print; tag = 0 }
	     in_opts && /^\.TP/ { tag = 1 }' "$1" |
		sed -E 's/\\-/-/g; s/\\f[BIRP]//g; s/\\c$//; s/^\.[A-Z]+ ?//; s/"//g' | options
}

fail=0
for tool in "$@"; do
	name=${tool##*/}
	page=$man_dir/$name.1
	if ! "$tool" --help >"$tmp/help" 2>"$tmp/err" || [ ! -s "$tmp/help" ]; then
		echo "$name --help: not a usage on stdout with exit status 0:"
		cat "$tmp/err"
		fail=1
		continue
	fi
	if [ ! -f "$page" ]; then
		echo "$name: no man page $page"
		fail=1
		continue
	fi
	help_options <"$tmp/help" >"$tmp/in_help"
	page_options "$page" >"$tmp/in_page"
	set_diff "$tmp/in_help" "$tmp/in_page" \
		"$name: options of --help missing from OPTIONS in $page:" \
		"$name: options under OPTIONS in $page that --help does not print:" || fail=1
	if ! groff -man -Tutf8 -ww -z "$page" >"$tmp/groff" 2>&1 || [ -s "$tmp/groff" ]; then
		echo "$name: groff -man -ww warns on $page:"
		cat "$tmp/groff"
		fail=1
	fi
	echo "$name: $(wc -l <"$tmp/in_help") options in --help and $page"
done
exit $fail
