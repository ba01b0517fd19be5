# Shared by ci/rxe-guest and ci/rxe-twohost: the soft-RoCE guest's kernel,
# initramfs and stage2, qemu's start and stop, and the logs of a failed run.
# The caller sets repo (the repository root) and defines fail97 (the guest
# could not run: message, exit 97).  See shared/docs/rxe-vm.md.
# shellcheck shell=bash disable=SC2154  # repo: set by the caller

# Modules for the 9p root and the overlay, in load order (dependencies first);
# everything else (RDMA, dummy) is loaded later with the real modprobe.
initrd_modules=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
	9pnet 9pnet_virtio netfs fscache 9p overlay)

# PID 1 of the guest, busybox sh.  It mounts the shares, builds the overlay
# root and chroots into it to run stage2, which the host writes for each run.
guest_init() {
	cat <<'EOF'
#!/bin/busybox sh
# PID 1 of the rxe guest, built by ci/rxe-guest.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t devtmpfs devtmpfs /dev
# The initramfs has no /dev/console node, so the kernel gave us no stdio.
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
fail() {
	echo "rxe-init: $*"
	poweroff -f
	sleep 1000
}
while read -r m; do
	insmod "/modules/$m.ko" || fail "insmod $m failed"
done </modules.list
# 9p: virtio probing is synchronous, but be lenient about the first mount.
mount9p() {
	for i in 1 2 3 4 5 6 7 8 9 10; do
		mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000$3" "$1" "$2" && return 0
		sleep 0.2
	done
	return 1
}
mkdir -p /lower /rw /host
# cache=loose: the guest may keep what it read in its page cache.  Without it
# every exec reads its binary and libraries again over 9p (~1 s an exec
# instead of ~0.3 s).  The price: host-side changes to files the guest has
# already read are not seen during the run.
mount9p hostroot /lower ,ro,cache=loose || fail "cannot mount the host root (9p tag hostroot)"
mount -t tmpfs -o mode=0755 rw /rw || fail "tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /host ||
	fail "cannot mount the overlay root"
mkdir -p /host/proc /host/sys /host/dev /host/tmp /host/run
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t devtmpfs devtmpfs /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /host/dev/pts
mount -t tmpfs -o mode=1777 shm /host/dev/shm
mount -t tmpfs -o mode=1777 tmp /host/tmp
mount -t tmpfs -o mode=0755 run /host/run
mkdir -p /host/run/oxr-rxe
mount9p oxrout /host/run/oxr-rxe "" || fail "cannot mount the results share (9p tag oxrout)"
# The kernel's module auto-loader runs its helper in this initramfs, which
# has no modules: send it to the real modprobe in the chroot.
printf '#!/bin/busybox sh\nexec /bin/busybox chroot /host /sbin/modprobe "$@"\n' >/bin/umh-modprobe
chmod 755 /bin/umh-modprobe
echo /bin/umh-modprobe >/proc/sys/kernel/modprobe
chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb LANG=C.UTF-8 \
	/bin/bash /run/oxr-rxe/stage2
sync
poweroff -f
EOF
}

# build_initrd FILE: busybox, the modules (decompressed: busybox insmod reads
# only plain .ko), /init.
build_initrd() {
	local file=$1 stage m path
	stage=$(mktemp -d "$repo/.rxe/build.XXXXXX")
	mkdir -p "$stage"/{bin,dev,proc,sys,modules}
	cp /bin/busybox "$stage/bin/busybox"
	for m in "${initrd_modules[@]}"; do
		path=$(modinfo -k "$kver" -F filename "$m" 2>/dev/null) ||
			{ rm -rf "$stage"; fail97 "module $m not found for kernel $kver; reinstall linux-image-$kver (and run depmod $kver)"; }
		case $path in
		'(builtin)') continue ;;
		*.ko) cp "$path" "$stage/modules/$m.ko" ;;
		*.ko.xz) xz -dc "$path" >"$stage/modules/$m.ko" ;;
		*.ko.gz) gzip -dc "$path" >"$stage/modules/$m.ko" ;;
		*.ko.zst)
			command -v zstd >/dev/null || { rm -rf "$stage"; fail97 "$path is zstd-compressed; install zstd"; }
			zstd -qdc "$path" >"$stage/modules/$m.ko" ;;
		*) rm -rf "$stage"; fail97 "module $m: unknown file $path" ;;
		esac
		echo "$m" >>"$stage/modules.list"
	done
	guest_init >"$stage/init"
	chmod 755 "$stage/init"
	# Uncompressed: a few MB, and the guest need not decompress it under TCG.
	(cd "$stage" && find . | /bin/busybox cpio -o -H newc >"$file.tmp" 2>/dev/null)
	mv -f "$file.tmp" "$file"
	rm -rf "$stage"
}

# Under TCG the kernel's own xz decompressor takes ~7 of a ~20 s boot.  So
# keep the uncompressed ELF image in the cache and boot it through its PVH
# entry point (qemu loads an ELF vmlinux that has a PVH note directly).
# extract_vmlinux IMAGE OUT: the first compressed payload that gives an ELF.
extract_vmlinux() {
	local image=$1 out=$2 magic tool off
	for magic in '\xfd\x37\x7a\x58\x5a\x00 xz' '\x28\xb5\x2f\xfd zstd' '\x1f\x8b\x08 gzip'; do
		tool=${magic#* }
		command -v "$tool" >/dev/null || continue
		for off in $(LC_ALL=C grep -aboP "${magic% *}" "$image" 2>/dev/null |
			cut -d: -f1 | head -3); do
			case $tool in
			xz) tail -c +$((off + 1)) "$image" | xz -dcq --single-stream >"$out.tmp" 2>/dev/null ;;
			zstd) tail -c +$((off + 1)) "$image" | zstd -dcq >"$out.tmp" 2>/dev/null ;;
			gzip) tail -c +$((off + 1)) "$image" | gzip -dcq >"$out.tmp" 2>/dev/null ;;
			esac
			if [ "$(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
				mv -f "$out.tmp" "$out"
				return 0
			fi
		done
	done
	rm -f "$out.tmp"
	return 1
}

# rxe_prepare: checks the host (packages, qemu, busybox, a kernel with
# rdma_rxe) and builds what the cache lacks; sets kernel, kver, initrd and
# boot_image.
rxe_prepare() {
	# stdout belongs to COMMAND, so the installer's chatter goes to stderr.
	ensure_packages "${OXR_RXE_PACKAGES[@]}" >&2 ||
		fail97 "could not install ${OXR_RXE_PACKAGES[*]}; install them with apt-get"
	command -v qemu-system-x86_64 >/dev/null ||
		fail97 "qemu-system-x86_64 not found; install qemu-system-x86"
	[ -x /bin/busybox ] || fail97 "/bin/busybox not found; install busybox-static"
	# A dynamic busybox (package busybox) would need its libraries in the initramfs.
	if ldd /bin/busybox >/dev/null 2>&1; then
		fail97 "/bin/busybox is dynamically linked; install busybox-static"
	fi

	# Newest kernel that ships soft-RoCE, or the one named by OXR_RXE_KERNEL.
	rxe_module_of() { compgen -G "/lib/modules/$1/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null; }
	if [ -n "${OXR_RXE_KERNEL:-}" ]; then
		kernel=$OXR_RXE_KERNEL
		[ -f "$kernel" ] || fail97 "kernel $kernel (OXR_RXE_KERNEL) not found; unset OXR_RXE_KERNEL or install linux-image-amd64"
		case ${kernel##*/} in
		vmlinuz-*) kver=${kernel##*/vmlinuz-} ;;
		*) fail97 "kernel $kernel (OXR_RXE_KERNEL) is not named vmlinuz-<version>, so its modules cannot be found" ;;
		esac
		rxe_module_of "$kver" || fail97 "no rdma_rxe module in /lib/modules/$kver for $kernel; install linux-image-$kver"
	else
		kernel=
		for k in $(compgen -G '/boot/vmlinuz-*' | sort -rV); do
			if rxe_module_of "${k#/boot/vmlinuz-}"; then
				kernel=$k
				break
			fi
		done
		[ -n "$kernel" ] ||
			fail97 "no /boot/vmlinuz-* with a matching /lib/modules/<version>/.../rdma_rxe.ko; install linux-image-amd64"
		kver=${kernel#/boot/vmlinuz-}
	fi
	# Debian's images are often mode 0600: qemu must read it as this user.
	[ -r "$kernel" ] || fail97 "cannot read $kernel; run as root or make it readable (chmod a+r)"


	mkdir -p "$repo/.rxe"
	initrd=$repo/.rxe/initrd-$kver.cpio
	# Rebuilt when the kernel, busybox, the module list or the init changes.
	key="$kver $(stat -c %Y:%s /bin/busybox) ${initrd_modules[*]} $(guest_init | cksum)"
	if [ ! -f "$initrd" ] || [ "$(cat "$initrd.key" 2>/dev/null)" != "$key" ]; then
		rm -f "$repo"/.rxe/initrd-*.cpio "$repo"/.rxe/initrd-*.cpio.key
		build_initrd "$initrd"
		echo "$key" >"$initrd.key"
	fi

	boot_image=$kernel
	# Only kernels built with CONFIG_PVH can boot this way; otherwise the slow way.
	if grep -qs '^CONFIG_PVH=y' "$(dirname "$kernel")/config-$kver"; then
		vmlinux=$repo/.rxe/vmlinux-$kver
		if [ ! -s "$vmlinux" ] || [ "$(cat "$vmlinux.key" 2>/dev/null)" != "$(stat -c %Y:%s "$kernel")" ]; then
			rm -f "$repo"/.rxe/vmlinux-*
			extract_vmlinux "$kernel" "$vmlinux" && stat -c %Y:%s "$kernel" >"$vmlinux.key"
		fi
		[ -s "$vmlinux.key" ] && boot_image=$vmlinux
	fi

}

# Runs as root in the chroot: RDMA modules, rxe0, then COMMAND.  The host
# writes a header before it: net (dummy0: rxe0 on a dummy netdev, nothing
# leaves the guest; eth0: rxe0 on the virtio NIC, rxe_addr[ROLE]/24 on it), cwd
# and cmd.  ROLE is oxr.role= on the kernel command line (none for a lone
# guest); the files of a guest are ROLE.NAME in the share, so two guests can
# share one.  Setup goes to setup.log; "ready" marks rxe0 up; COMMAND's
# output goes to "output" (the host streams it) and its status to "rc".
guest_stage2() {
	cat <<'EOF'
o=/run/oxr-rxe
role=
read -r cmdline </proc/cmdline
[[ $cmdline =~ oxr\.role=([a-z0-9]+) ]] && role=${BASH_REMATCH[1]}
f=$o/${role:+$role.}
step() {
	local up
	read -r up _ </proc/uptime
	echo "+ [$up] $*" >>"${f}setup.log"
	"$@" >>"${f}setup.log" 2>&1 && return 0
	echo "rxe guest: '$*' failed in the guest" >>"${f}setup.log"
	exit 1
}
h=rxevm${role:+-$role}
hostname "$h"                     # Open MPI and others refuse "(none)"
echo "127.0.1.1 $h" >>/etc/hosts  # ...and want it to resolve
# One modprobe, in this order (every exec costs ~0.3 s under TCG).
# crc32_generic first: rdma_rxe asks the crypto API for crc32 when a link is
# added, and without it "rdma link add" fails (err -2).
if [ "$net" = dummy0 ]; then
	step modprobe -a crc32_generic rdma_rxe ib_uverbs rdma_ucm dummy
	# Some kernels refuse rxe on lo; a dummy netdev works everywhere and keeps
	# everything inside the guest.
	step ip -batch - <<'IP'
link set lo up
link add dummy0 type dummy
link set dummy0 up
addr add 127.0.0.2/32 dev dummy0
IP
else
	addr=${rxe_addr[$role]:-}
	[ -n "$addr" ] || step false "no address for role '$role'"
	step modprobe -a crc32_generic rdma_rxe ib_uverbs rdma_ucm virtio_net
	for i in $(seq 50); do
		[ -e /sys/class/net/eth0 ] && break
		sleep 0.1
	done
	step ip -batch - <<IP
link set lo up
link set eth0 up
addr add $addr/24 dev eth0
IP
	export RXE_ROLE=$role RXE_ADDR=$addr
fi
step rdma link add rxe0 type rxe netdev "$net"
# devtmpfs makes the device nodes, asynchronously: wait for them too.
state=
for i in $(seq 50); do
	read -r state _ </sys/class/infiniband/rxe0/ports/1/state 2>/dev/null || true
	[ "$state" = 4: ] && [ -c /dev/infiniband/uverbs0 ] && [ -c /dev/infiniband/rdma_cm ] && break
	sleep 0.1
done
step grep ACTIVE /sys/class/infiniband/rxe0/ports/1/state
step test -c /dev/infiniband/uverbs0
step test -c /dev/infiniband/rdma_cm
ulimit -l unlimited                   # memory registration pins pages
ulimit -n 65536 2>/dev/null || true
: >"${f}ready"
cd "$cwd" 2>>"${f}output" || { echo "rxe guest: cannot enter $cwd in the guest" >>"${f}output"; echo 97 >"${f}rc"; exit 0; }
"${cmd[@]}" </dev/null >>"${f}output" 2>&1
echo $? >"${f}rc"
EOF
}

# rxe_write_stage2 FILE NET CWD COMMAND [ARGS...]: stage2 for one run (NET:
# dummy0 or eth0), with the caller's OXR_* variables.
rxe_write_stage2() {
	local file=$1 net=$2 cwd=$3 name
	shift 3
	{
		echo '#!/bin/bash'
		echo '# Written by ci/rxe-lib.sh for one run.'
		# The caller's OXR_* variables, quoted for bash.
		for name in $(compgen -e | grep '^OXR_' || true); do
			printf 'export %s=%q\n' "$name" "${!name}"
		done
		printf 'net=%q\n' "$net"
		echo "declare -A rxe_addr=([a]=$RXE_NET.1 [b]=$RXE_NET.2)"
		printf 'cwd=%q\n' "$cwd"
		printf 'cmd=('
		printf ' %q' "$@"
		printf ' )\n'
		guest_stage2
	} >"$file"
}
# The guests' own network (eth0 only): it exists on their wire alone, never on the host.
RXE_NET=10.77.0

# rxe_qemu DIR ROLE SMP MEM [QEMU ARGS...]: starts a guest in the background
# ($! is qemu), sharing DIR as its results share; ROLE (may be empty) goes on
# its kernel command line and names its logs, ROLE.console.log and
# ROLE.qemu.log.  TCG: KVM is there but nested guests hang.  The console
# goes to a file so that kernel messages never mix with COMMAND's output.
# tsc=reliable clocksource=tsc: under TCG the kernel otherwise rejects the
# TSC and keeps the HPET, whose every read is an emulated device access;
# clock_gettime was then a system call of 1.1 us (0.06 us on the TSC), and
# the kernel's own timestamps in rxe's packet path paid the same.  The
# guest's TSC is qemu's host-derived tick: one rate on every vCPU (checked
# against the host's clock: 4.196 s against 4.192 s).
rxe_qemu() {
	local dir=$1 role=$2 smp=$3 mem=$4 p=${2:+$2.}
	shift 4
	qemu-system-x86_64 \
		-accel tcg,thread=multi -cpu max -smp "$smp" -m "$mem" \
		-nographic -nodefaults -no-reboot -monitor none \
		-serial "file:$dir/${p}console.log" \
		-kernel "$boot_image" -initrd "$initrd" \
		-append "console=ttyS0 quiet panic=-1 tsc=reliable clocksource=tsc${role:+ oxr.role=$role}" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$dir,mount_tag=oxrout,security_model=none" \
		"$@" </dev/null >"$dir/${p}qemu.log" 2>&1 &
}

# rxe_stop PID: qemu gets a moment to go, then SIGKILL.
rxe_stop() {
	local pid=$1
	kill -0 "$pid" 2>/dev/null || return 0
	kill "$pid" 2>/dev/null
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.2
	done
	kill -9 "$pid" 2>/dev/null
	return 0
}

# rxe_show_logs DIR [ROLE]: what a guest said, for a run that went wrong.
rxe_show_logs() {
	local f p=${2:+$2.}
	for f in qemu.log setup.log console.log; do
		[ -s "$1/$p$f" ] || continue
		echo "--- rxe guest: tail of $p$f" >&2
		# SeaBIOS writes terminal escapes (reset, clear screen): strip them.
		# shellcheck disable=SC1003  # sed '$a\' adds a missing final newline
		tail -n 25 "$1/$p$f" | LC_ALL=C sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1b.//g' -e '$a\' |
			LC_ALL=C tr -d '\000-\010\013-\037\177' >&2
	done
}
