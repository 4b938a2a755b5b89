#!/usr/bin/env bash
# Prints the user-mode Linux the lab boots and the directory of its kernel's modules, on one line:
#   /path/to/linux.uml /path/to/modules
# Debian's own (bookworm's 6.1) where it runs on this machine's CPU. Where it does not (a CPU with
# AMX: its XSAVE area is larger than the buffer UML 6.1 and 6.12 save a process's registers in, and
# the guest's first process dies at once with "ptrace set fp regs failed, errno = 14"), Debian
# unstable's user-mode-linux, whose kernel sizes that buffer from the host, unpacked into the cache
# with the C library it was built against (stable's, loaded through its own ld.so: patchelf).
set -euo pipefail
CACHE=${NODELET_CACHE_DIR:-$HOME/.cache/nodelet}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SYSTEM_UML=/usr/bin/linux.uml
SYSTEM_MODULES=/usr/lib/uml/modules
log() { printf '[lab] %s\n' "$*" >&2; }

# Whether a kernel runs a process: /bin/true as init, which ends it (the panic names its exit code).
runs_here() {
  local scratch out
  scratch=$(mktemp -d)
  out=$(timeout 60 "$1" mem=64M root=/dev/root rootfstype=hostfs hostfs=/ ro init=/bin/true con=null con0=fd:0,fd:1 \
    uml_dir="$scratch" umid=probe </dev/null 2>&1 || true)
  rm -rf "$scratch"
  grep -q 'Attempted to kill init! exitcode=0x00000000' <<<"$out"
}

# The pool path of PACKAGE in SUITE's index.
pool_path() {
  curl -fsSL --retry 3 "$MIRROR/dists/$1/main/binary-amd64/Packages.xz" | xz -dc |
    awk -v p="$2" '$1 == "Package:" { hit = ($2 == p) } hit && $1 == "Filename:" && !done { print $2; done = 1 }'
}

if [ -x "$SYSTEM_UML" ] && runs_here "$SYSTEM_UML"; then
  echo "$SYSTEM_UML $SYSTEM_MODULES"
  exit 0
fi
dir=$CACHE/uml-unstable
if ! { [ -x "$dir/linux.uml" ] && runs_here "$dir/linux.uml"; }; then
  log "Debian's user-mode Linux does not run on this CPU: fetching unstable's (cached in $dir)"
  command -v patchelf >/dev/null || { log "patchelf is missing (make setup installs it)"; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  uml_deb=$(pool_path sid user-mode-linux)
  libc_deb=$(pool_path trixie libc6)
  [ -n "$uml_deb" ] && [ -n "$libc_deb" ] || { log "user-mode-linux or libc6 not found in Debian's indexes"; exit 1; }
  curl -fsSL --retry 3 -o "$work/uml.deb" "$MIRROR/$uml_deb"
  curl -fsSL --retry 3 -o "$work/libc.deb" "$MIRROR/$libc_deb"
  dpkg-deb -x "$work/uml.deb" "$work/uml"
  dpkg-deb -x "$work/libc.deb" "$work/libc"
  rm -rf "$dir.new" && mkdir -p "$dir.new"
  cp "$work/uml/usr/bin/linux.uml" "$dir.new/linux.uml"
  cp -a "$work/uml/usr/lib/uml/modules" "$dir.new/modules"
  cp -a "$work/libc/usr/lib/x86_64-linux-gnu" "$dir.new/lib"
  patchelf --set-interpreter "$dir/lib/ld-linux-x86-64.so.2" --set-rpath "$dir/lib" "$dir.new/linux.uml"
  echo "$uml_deb $libc_deb" >"$dir.new/FROM"
  rm -rf "$dir" && mv "$dir.new" "$dir"
  runs_here "$dir/linux.uml" || { log "$dir/linux.uml does not run here either"; exit 1; }
  log "user-mode Linux from $(cat "$dir/FROM")"
fi
echo "$dir/linux.uml $dir/modules"
