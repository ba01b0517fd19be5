# Shared by ci/test and ci/verbs-suite (which runs in the rxe guest): ctest
# runs whose test counts are checked against what the suite holds, so that a
# stage which ran no test, or fewer than it lists, fails instead of passing.
# shellcheck shell=bash

# criterion_held EXE [PATTERN]: how many tests the Criterion binary EXE holds
# (those whose suite/name PATTERN matches, Criterion's --filter glob).  Fails
# when --list fails or lists none.
criterion_held() {
	local exe=$1 pat=${2:-} out line suite='' name n=0
	out=$(ASAN_OPTIONS=detect_leaks=0 "$exe" --list 2>/dev/null) || return 1
	while IFS= read -r line; do
		if [[ $line =~ ^([^[:space:]]+):\ [0-9]+\ tests?$ ]]; then
			suite=${BASH_REMATCH[1]}
			continue
		fi
		# "├── name" (or an ASCII tree outside a UTF-8 locale): the name is an identifier
		name=${line##*[!A-Za-z0-9_]}
		if [ -z "$suite" ] || [ -z "$name" ]; then continue; fi
		# shellcheck disable=SC2053 # the pattern is a glob on purpose
		if [ -z "$pat" ] || [[ $suite/$name == $pat ]]; then
			n=$((n + 1))
		fi
	done <<<"$out"
	[ "$n" -gt 0 ] || return 1
	echo "$n"
}

# ctest_plan DIR CTEST-ARGS...: one line per test that `ctest -N` lists with
# the same arguments: "NUMBER NAME HELD", HELD the number of Criterion tests
# it should run (its --filter or $CRITERION_TEST_PATTERN applied), "-" for a
# test that is no Criterion binary (a script, oxr-info, cmake -P).
ctest_plan() {
	local dir=$1 num cmd exe pat held line
	shift
	ctest --test-dir "$dir" -N -V "$@" 2>/dev/null | while IFS= read -r line; do
		if [[ $line =~ ^([0-9]+):\ Test\ command:\ (.*)$ ]]; then
			num=${BASH_REMATCH[1]}
			cmd=${BASH_REMATCH[2]}
			exe=${cmd%% *}
			held=-
			if readelf -d "$exe" 2>/dev/null | grep -q 'NEEDED.*libcriterion'; then
				pat=${CRITERION_TEST_PATTERN:-}
				[[ $cmd =~ \"--filter\"\ \"([^\"]*)\" ]] && pat=${BASH_REMATCH[1]}
				held=$(criterion_held "$exe" "$pat") || held=0
			fi
		elif [[ $line =~ ^\ +Test\ +#([0-9]+):\ (.*)$ ]] && [ "${BASH_REMATCH[1]}" = "${num:-}" ]; then
			echo "$num ${BASH_REMATCH[2]} $held"
		fi
	done
}

# ctest_counts NAME LOG DIR CTEST-ARGS...: after `ctest -V CTEST-ARGS` in DIR
# wrote LOG, checks that it ran every test `ctest -N` lists (at least one),
# and that each Criterion binary printed its synthesis with as many tests as
# it holds (a skipped or filtered-out test counts as missing).  Prints
# "NAME: ctest ran R of L tests; Criterion tested T of H", says what is
# missing, and sets COUNT_TESTED=T, COUNT_HELD=H.  Returns 1 on a shortfall.
COUNT_TESTED=0
COUNT_HELD=0
ctest_counts() {
	local name=$1 log=$2 dir=$3 plan listed ran num test held tested bad=0
	shift 3
	COUNT_TESTED=0
	COUNT_HELD=0
	plan=$(ctest_plan "$dir" "$@")
	listed=$(printf '%s' "$plan" | grep -c .)
	ran=$(sed -n 's/.* tests failed out of \([0-9]*\)$/\1/p' "$log" | tail -1)
	if [ "$listed" -eq 0 ]; then
		echo "$name: COUNT: ctest lists no test in $dir for: $*"
		bad=1
	fi
	if [ "${ran:-0}" -ne "$listed" ]; then
		echo "$name: COUNT: ctest ran ${ran:-no} tests, it lists $listed"
		bad=1
	fi
	while read -r num test held; do
		if [ -z "$num" ] || [ "$held" = - ]; then continue; fi
		tested=$(sed -n "s/^$num: \[====\] Synthesis: Tested: \([0-9]*\) .*/\1/p" "$log" | tail -1)
		COUNT_HELD=$((COUNT_HELD + held))
		COUNT_TESTED=$((COUNT_TESTED + ${tested:-0}))
		if [ "$held" -eq 0 ]; then
			echo "$name: COUNT: $test: its --list gives no test"
			bad=1
		elif [ -z "$tested" ]; then
			echo "$name: COUNT: $test printed no Criterion synthesis (it holds $held tests)"
			bad=1
		elif [ "$tested" -lt "$held" ]; then
			echo "$name: COUNT: $test tested $tested of the $held tests it holds"
			bad=1
		fi
	done <<<"$plan"
	echo "$name: ctest ran ${ran:-0} of $listed tests; Criterion tested $COUNT_TESTED of $COUNT_HELD"
	return $bad
}
