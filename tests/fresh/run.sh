#!/bin/sh
# make test-fresh: the README's set-up, on a fresh Debian machine.
#
# Builds a minimal Debian bookworm root with debootstrap (--variant=minbase,
# from the archive this machine's apt uses), gives it this machine's
# package-manager configuration as a fresh machine of this kind has it
# (apt sources and settings, npm configuration, the CA trust store, DNS),
# installs in it only what such a machine has (gcc, make, git, python3 from
# Debian; node and npm copied from this machine), copies a clean clone of
# HEAD into it and runs, as root, without a terminal:
#     make
#     ./attnscope -e 'prompt It is a truth universally acknowledged; finish; top 5'
#     make test
# with /proc, /dev/pts, a tmpfs /tmp and /dev/shm mounted (tmux and the
# view's tests need them). Fails when any of them fails, when `make test`
# there skips a check that `make test` on this machine ran (HOST_LOG, the
# log `make test` writes, build/test.log), when their counts differ, when a
# command tests/deps/fresh-commands says a fresh machine has is missing,
# or when `git status` there is not clean afterwards. Prints the packages
# the Makefile installed in the root.
#
# The base root (debootstrap and the four packages) is cached as a tarball
# (build/fresh/base-bookworm.tar); later runs only unpack it. Everything
# mounted is unmounted on the way out, also when interrupted, before
# anything is deleted; a root that still has a mount under it is never
# deleted.
#   sh tests/fresh/run.sh [HOST_LOG]     (as root; make test-fresh)
#   sh tests/fresh/run.sh --unmount      (make clean: what a killed run left mounted)
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
host_log=${1:-$repo/build/test.log}
suite=bookworm
dir=$repo/build/fresh
base=$dir/base-$suite.tar
R=$dir/root
log=$dir/test.log

say() { echo "test-fresh: $*"; }
die() {
    echo "################################################################################"
    echo "## test-fresh FAILED: $*"
    echo "################################################################################"
    exit 1
}

# Mount points under $R, deepest first, from the kernel's own table.
mounts_under() { awk -v r="$1" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r; }
unmount_all() {
    for m in $(mounts_under "$R"); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "test-fresh: cannot unmount $m" >&2
    done
}
# Deletes the root only when nothing is mounted under it any more.
remove_root() {
    unmount_all
    if [ -n "$(mounts_under "$R")" ]; then
        echo "test-fresh: still mounted under $R, not deleting it: $(mounts_under "$R" | tr '\n' ' ')" >&2
        return 1
    fi
    rm -rf "$R"
}
# make clean: unmount what an interrupted run left, before build/ goes
if [ "${1:-}" = --unmount ]; then unmount_all; [ -z "$(mounts_under "$R")" ]; exit; fi
trap 'unmount_all' EXIT
trap 'echo "test-fresh: interrupted" >&2; exit 130' INT TERM HUP

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot and mount), as CI runs it"
for t in debootstrap chroot mount git tar; do
    command -v $t >/dev/null 2>&1 || die "$t is missing (make test-fresh installs it as root)"
done
[ -f "$host_log" ] || die "no log of make test on this machine ($host_log): run make test first"
grep -q '^make-test: exit 0$' "$host_log" || die "make test on this machine did not pass ($host_log)"

# The Debian archive apt uses here: the first URIs of a deb822 source, else
# the first deb line.
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *//p' | grep -v -- '-security' | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || die "no Debian archive found in /etc/apt/sources.list{,.d}"
mirror=${mirror%% *}

# This machine's package-manager configuration, as a fresh machine has it.
configure() {
    mkdir -p "$R/etc/apt" "$R/usr/etc" "$R/root" "$R/etc/ssl" "$R/usr/share" "$R/usr/local/share"
    rm -rf "$R/etc/apt/sources.list.d" "$R/etc/apt/apt.conf.d"
    cp -a /etc/apt/sources.list.d /etc/apt/apt.conf.d "$R/etc/apt/"
    if [ -f /etc/apt/sources.list ]; then cp /etc/apt/sources.list "$R/etc/apt/"; else : > "$R/etc/apt/sources.list"; fi
    [ -d /etc/apt/keyrings ] && cp -a /etc/apt/keyrings "$R/etc/apt/"
    [ -d /etc/apt/trusted.gpg.d ] && cp -a /etc/apt/trusted.gpg.d "$R/etc/apt/"
    for f in /etc/npmrc /usr/etc/npmrc /root/.npmrc; do [ -f "$f" ] && cp -a "$f" "$R$f"; done
    rm -rf "$R/etc/ssl/certs"
    cp -a /etc/ssl/certs "$R/etc/ssl/"
    for d in /usr/share/ca-certificates /usr/local/share/ca-certificates; do
        [ -d "$d" ] && rm -rf "$R$d" && cp -a "$d" "$R$d"
    done
    [ -f /etc/ca-certificates.conf ] && cp /etc/ca-certificates.conf "$R/etc/"
    cp -L /etc/resolv.conf "$R/etc/resolv.conf"
    cp /etc/hosts "$R/etc/hosts"
}

in_root() { chroot "$R" /usr/bin/env -i HOME=/root LANG="${LANG:-C.UTF-8}" CI="${CI:-}" DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

mkdir -p "$dir"
if [ -d "$R" ]; then remove_root || die "an earlier root could not be removed"; fi
t0=$(date +%s)
if [ ! -f "$base" ]; then
    say "debootstrap --variant=minbase $suite from $mirror (cached afterwards as $base)"
    mkdir -p "$R"
    debootstrap --variant=minbase "$suite" "$R" "$mirror" > "$dir/debootstrap.log" 2>&1 ||
        die "debootstrap failed: $(tail -n 3 "$dir/debootstrap.log" | tr '\n' ' ') (log: $dir/debootstrap.log)"
    configure
    mount -t proc proc "$R/proc" || die "cannot mount /proc in the root"
    { in_root apt-get update && in_root apt-get install -y gcc make git python3 && in_root apt-get clean; } \
        > "$dir/base.log" 2>&1 || die "installing gcc make git python3 in the root failed (log: $dir/base.log)"
    unmount_all
    tar -C "$R" -cf "$base.tmp" . && mv "$base.tmp" "$base" || die "cannot write $base"
    remove_root || die "cannot remove the root after caching it"
fi
mkdir -p "$R"
tar -C "$R" -xf "$base" || die "cannot unpack $base"
configure
# node and npm as this machine has them (the registry's npm, not Debian's)
if [ -x /usr/bin/node ] && [ -d /usr/lib/node_modules/npm ]; then
    cp -a /usr/bin/node "$R/usr/bin/node"
    mkdir -p "$R/usr/lib/node_modules"
    cp -a /usr/lib/node_modules/npm "$R/usr/lib/node_modules/"
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$R/usr/bin/npm"
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$R/usr/bin/npx"
else
    say "this machine has no node/npm in /usr: the root gets none either"
fi
git clone -q --no-hardlinks "$repo" "$R/root/attnscope" || die "cannot clone $repo"
say "root ready in $(( $(date +%s) - t0 )) s: $(cd "$repo" && git log -1 --format='%h %s' | cut -c1-80)"

mount -t proc proc "$R/proc" &&
    mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$R/dev/pts" &&
    { [ -e "$R/dev/ptmx" ] || touch "$R/dev/ptmx"; } && mount --bind "$R/dev/pts/ptmx" "$R/dev/ptmx" &&
    mount -t tmpfs -o mode=1777 tmpfs "$R/tmp" &&
    { mkdir -p "$R/dev/shm"; mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm"; } ||
    die "cannot mount /proc, /dev/pts, /tmp and /dev/shm in the root"

# What a fresh machine has, by tests/deps/fresh-commands: all there?
absent=$(for c in $(grep -v '^#' "$repo/tests/deps/fresh-commands"); do
    in_root sh -c "command -v $c >/dev/null 2>&1" || echo "$c"; done | tr '\n' ' ')
[ -z "$absent" ] || die "tests/deps/fresh-commands lists commands a fresh root does not have: $absent"

cat > "$R/root/steps.sh" <<'EOF'
set -u
cd /root/attnscope
dpkg-query -W -f '${Package}\n' | sort > /root/pkgs.before
echo "== make"
make || { echo "make-fresh: make failed"; exit 1; }
echo "== ./attnscope -e 'prompt It is a truth universally acknowledged; finish; top 5'"
./attnscope -e 'prompt It is a truth universally acknowledged; finish; top 5' </dev/null ||
    { echo "make-fresh: the batch run failed"; exit 1; }
echo "== make test"
make test; rc=$?
dpkg-query -W -f '${Package}\n' | sort > /root/pkgs.after
echo "== git status --porcelain"
git status --porcelain > /root/status
cat /root/status
exit $rc
EOF
say "running make, the batch run and make test in the root (log: $log)"
t1=$(date +%s)
in_root sh /root/steps.sh < /dev/null > "$log" 2>&1
rc=$?
t2=$(date +%s)
installed=$(comm -13 "$R/root/pkgs.before" "$R/root/pkgs.after" 2>/dev/null | tr '\n' ' ')
# the packages asked for by name (the Makefile's lines), and how many came with them
asked=$(sed -n 's/^attnscope: installing for \([^:]*\): \(.*\)$/  \1: \2/p' "$log")
say "the Makefile installed in the root:"
echo "${asked:-  nothing}"
say "$(echo "$installed" | wc -w) packages in all (with their dependencies)"
[ $rc = 0 ] || { tail -n 40 "$log"; die "make, the batch run or make test failed in the root (exit $rc; log: $log)"; }
grep -q 'next token after position' "$log" || die "the batch run printed no next-token table (log: $log)"
[ -s "$R/root/status" ] && die "git status is not clean after make test in the root: $(tr '\n' ' ' < "$R/root/status")"

# The checks: what ran and what was skipped, here and in the root.
sh "$repo/tests/fresh/summary.sh" "$host_log" "$repo" > "$dir/host.summary"
sh "$repo/tests/fresh/summary.sh" "$log" /root/attnscope > "$dir/fresh.summary"
say "make test here and in the root:"
sed -n 's/^count \(.*\(passed\|Synthesis\).*\)/  \1/p' "$dir/host.summary"
if ! cmp -s "$dir/host.summary" "$dir/fresh.summary"; then
    diff "$dir/host.summary" "$dir/fresh.summary" | sed 's/^/  /'
    die "make test in the root ran other checks than here (< here, > root; $dir/*.summary)"
fi
say "passed: make test in the fresh root ran every check this machine ran, skipped none it did not" \
    "($(( t2 - t1 )) s for make, the batch run and make test; $(( t2 - t0 )) s in all)"
remove_root
