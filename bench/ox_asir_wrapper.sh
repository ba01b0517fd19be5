#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Risa/Asir's ox_asir as a server of oxr_master (OXR_SERVER=this script, or
# bench_rfc100 --server this script), by hand only: CI cannot build asir.
#
# oxr_master starts a server with its data channel on fds 3 and 4 and its
# control channel on fd 5, and passes "--control-fd 5".  ox_asir takes no
# such argument and no control channel: asir's launcher (io/ox_launch.c)
# execs it with the data socket on 3 and 4, stdin closed, fds 5 and up
# closed, DISPLAY empty and no arguments, and stays itself as the control
# process.  So does this script: it answers the control channel's byte-order
# exchange (the engine writes first), runs ox_asir as ox_launch_nox does,
# and ends it on the first control message (SM_shutdown, SM_control_kill;
# an RFC-100 reset is not supported) or when the master goes.
#
# ASIR_LIBDIR: asir's library directory, the one that holds ox_asir
# (default /work/asirw/asirlib, where tools/build-asir.sh puts it).
ASIR_LIBDIR=${ASIR_LIBDIR:-/work/asirw/asirlib}
export ASIR_LIBDIR
DISPLAY=
export DISPLAY
[ -x "$ASIR_LIBDIR/ox_asir" ] || { echo "ox_asir_wrapper: no $ASIR_LIBDIR/ox_asir" >&2; exit 127; }
printf '\001' >&5                       # little-endian, as asir on x86
dd bs=1 count=1 <&5 >/dev/null 2>&1     # the master's byte
"$ASIR_LIBDIR/ox_asir" <&- 5<&- >/dev/null 2>&1 &
pid=$!
exec 3<&- 4<&-                          # only ox_asir holds the data channel
dd bs=1 count=1 <&5 >/dev/null 2>&1     # any control message, or EOF
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exit 0
