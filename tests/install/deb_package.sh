#!/usr/bin/env bash
# The Debian packages CPack makes of this build (packaging/CMakeLists.txt),
# checked without a second machine:
# - `lockstep` and `lockstep-dev` are made, with the version, and hold what
#   `cmake --install` installs (binaries, man pages, documents, vectors;
#   the library, its headers and its CMake package);
# - their declared dependencies cover what the binaries need: every shared
#   library each installed binary is linked to (readelf's NEEDED, resolved
#   by ldd) belongs to a Debian package (dpkg -S) that `Depends` names;
# - on a Debian 12 with nothing installed (apt with an empty status file
#   and this machine's package lists), apt can install both packages with
#   everything they depend on from the archive (skipped, and said, without
#   package lists);
# - dpkg installs both into a root of their own (an empty dpkg database),
#   where the installed `lockstep --version` runs and the consumer of
#   tests/install/consumer/ builds against that root's CMake package.
# usage: deb_package.sh CPACK CMAKE BUILD_DIR SOURCE_DIR VERSION WORK_DIR
set -uo pipefail
cpack=$1 cmake=$2 build_dir=$3 source_dir=$4 version=$5 work=$6
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
arch=$(dpkg --print-architecture)

(cd "$build_dir" && "$cpack" -G DEB -B "$work/out") >"$work/cpack.log" 2>&1 || { tail -20 "$work/cpack.log"; fail "cpack failed"; }
tool=$work/out/lockstep_${version}_$arch.deb
dev=$work/out/lockstep-dev_${version}_$arch.deb
[ -f "$tool" ] && [ -f "$dev" ] || fail "cpack did not make $(basename "$tool") and $(basename "$dev"): $(ls "$work/out")"
field() { dpkg-deb -f "$1" "$2"; }
for deb in "$tool" "$dev"; do
  [ "$(field "$deb" Version)" = "$version" ] || fail "$(basename "$deb"): Version $(field "$deb" Version)"
  [ "$(field "$deb" Architecture)" = "$arch" ] || fail "$(basename "$deb"): Architecture $(field "$deb" Architecture)"
  echo "$(field "$deb" Package) $version: $(du -k "$deb" | cut -f1) KiB; Depends: $(field "$deb" Depends)"
done
echo "lockstep Recommends: $(field "$tool" Recommends); Suggests: $(field "$tool" Suggests)"

contents() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./|/|'; }
contents "$tool" >"$work/tool.list"
contents "$dev" >"$work/dev.list"
for path in /usr/bin/lockstep /usr/bin/lockstep-etcd-lock /usr/bin/lockstep-redis-lock \
            /usr/share/man/man1/lockstep.1.gz /usr/share/man/man1/lockstep-sim.1.gz /usr/share/man/man1/lockstep-merge.1.gz \
            /usr/share/man/man1/lockstep-redis-lock.1.gz /usr/share/doc/lockstep/README.md \
            /usr/share/doc/lockstep/docs/protocol.md /usr/share/lockstep/vectors/seed-a-unregistered.vec; do
  grep -qx "$path" "$work/tool.list" || fail "lockstep's package lacks $path"
done
for path in /usr/include/lockstep/client/client.hpp /usr/include/lockstep/impl/protocol.hpp \
            /usr/lib/liblockstep_client.a /usr/lib/liblockstep_impl.a /usr/lib/cmake/lockstep/lockstepConfig.cmake; do
  grep -qx "$path" "$work/dev.list" || fail "lockstep-dev's package lacks $path"
done
grep -q '^/usr/include\|^/usr/lib/' "$work/tool.list" && fail "lockstep's package holds the library's files"
grep -q '^/usr/bin' "$work/dev.list" && fail "lockstep-dev's package holds binaries"

# Every library a binary needs, by the package that ships it on this
# machine, named in Depends.
dpkg-deb -x "$tool" "$work/tree"
depends=$(field "$tool" Depends | tr ',' '\n' | sed 's/^ *//; s/ .*//; s/|.*//')
checked=0
for binary in "$work"/tree/usr/bin/*; do
  for soname in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    library=$(ldd "$binary" | awk -v so="$soname" '$1 == so {print $3}')
    [ -n "$library" ] || fail "$(basename "$binary") needs $soname, which ldd does not resolve"
    package=$(dpkg -S "$(readlink -f "$library")" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$package" ] || package=$(dpkg -S "$library" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$package" ] || fail "$soname ($library) belongs to no Debian package"
    echo "$depends" | grep -qx "$package" || fail "$(basename "$binary") needs $soname of $package, which Depends does not name"
    checked=$((checked + 1))
  done
done
echo "libraries the binaries need, each of a package Depends names: $checked"

# A Debian 12 with nothing installed: can apt resolve both from the archive?
if ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
  : >"$work/empty-status"
  apt-get -s -o Dir::State::status="$work/empty-status" -o Debug::NoLocking=1 install "$tool" "$dev" \
    >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; fail "apt cannot install the packages on an empty system"; }
  grep -q "^Inst lockstep " "$work/apt.log" && grep -q "^Inst lockstep-dev " "$work/apt.log" ||
    fail "apt's simulation does not install both packages"
  echo "apt on an empty system: $(grep -c '^Inst ' "$work/apt.log") packages to install, both of ours among them"
else
  echo "SKIPPED PART: no apt package lists on this machine (apt-get update), so the install on an empty system was not simulated"
fi

# dpkg itself, into a root of their own.
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: >"$root/var/lib/dpkg/status"
dpkg --root="$root" --log=/dev/null --force-depends --force-not-root --force-script-chrootless -i "$tool" "$dev" \
  >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i into an empty root failed"; }
dpkg --root="$root" -s lockstep lockstep-dev 2>/dev/null | grep -c '^Status: install ok installed$' | grep -qx 2 ||
  fail "dpkg does not report both packages installed"
"$root/usr/bin/lockstep" --version | grep -q "^lockstep $version (commit " || fail "the packaged lockstep --version failed"
"$cmake" -S "$(dirname "$0")/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$root/usr" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$work/consumer.log" 2>&1 &&
  "$cmake" --build "$work/consumer" >>"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "the consumer did not build against the package"; }
grep -q "^lockstep_DIR:PATH=$root/usr/lib/cmake/lockstep$" "$work/consumer/CMakeCache.txt" || fail "the consumer found lockstep elsewhere"
echo "dpkg -i into an empty root: both installed; $("$root/usr/bin/lockstep" --version); the consumer builds against it"
echo ok
