# Shared by ci/test and ci/verbs-suite (which runs in the rxe guest): ctest
# runs whose test counts are checked against what the suite holds, so that a
# stage which ran no test, or fewer than it lists, fails instead of passing.
# shellcheck shell=bash

# test_providers_count BINDIR: on how many providers each per-provider test
# runs (tests/common/providers.h): the entries of OXR_TEST_PROVIDERS when it
# is set (an empty list: 1, the instance that fails; at most 8), else tcp,
# shm, shm-fifo, and verbs where BINDIR/oxr-info says a context would use a device (the
# same oxr_device_query the tests ask).
test_providers_count() {
	local n=0 p list
	if [ -n "${OXR_TEST_PROVIDERS+set}" ]; then
		IFS=, read -ra list <<<"$OXR_TEST_PROVIDERS"
		for p in "${list[@]}"; do
			[ -n "$p" ] && n=$((n + 1))
		done
		[ "$n" -gt 8 ] && n=8
		echo $((n > 0 ? n : 1))
		return
	fi
	n=3
	if env -u OXR_TRANSPORT "$1/oxr-info" 2>/dev/null | grep -q '^oxr would use: verbs'; then
		n=4
	fi
	echo "$n"
}

# criterion_held EXE [PATTERN]: how many tests the Criterion binary EXE holds
# (those whose suite/name PATTERN matches, Criterion's --filter glob): one
# per test, and one per provider (test_providers_count) for each test of a
# suite whose name ends in _per_provider (a Criterion parameterized test that
# --list names once).  Fails when --list fails or lists none.
criterion_held() {
	local exe=$1 pat=${2:-} out line suite='' name n=0 nprov=
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
			if [[ $suite == *_per_provider ]]; then
				: "${nprov:=$(test_providers_count "$(dirname "$exe")")}"
				n=$((n + nprov))
			else
				n=$((n + 1))
			fi
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
# and that each Criterion binary printed its synthesis with exactly as many
# tests as it holds (a skipped or filtered-out test, or a provider's instance
# that did not run, counts as missing; an instance more than the providers
# counted, as a miscount).  Prints
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
		elif [ "$tested" -gt "$held" ]; then
			echo "$name: COUNT: $test tested $tested tests, it holds $held (a per-provider test ran on more providers than counted?)"
			bad=1
		fi
	done <<<"$plan"
	echo "$name: ctest ran ${ran:-0} of $listed tests; Criterion tested $COUNT_TESTED of $COUNT_HELD"
	return $bad
}
