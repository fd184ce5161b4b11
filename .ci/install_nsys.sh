#!/usr/bin/env bash
# Install NVIDIA Nsight Systems (CLI only) from Debian's non-free section into a private root,
# for the nsys end-to-end test. Never fails CI: when it cannot install (no network, no apt-get,
# package gone from the archive) it prints one line and exits 0; the test then skips with the
# reason written to $NSYS_ROOT/UNAVAILABLE.
#
# - The system's apt sources and package state are left alone: a private sources list and a
#   private lists/cache directory are used, and packages are fetched with `apt-get download`
#   and unpacked with `dpkg -x` (a real `apt-get install nsight-systems` pulls NVIDIA driver
#   packages).
# - Two fixes: libssh-4 (the importer needs libssh.so.4) goes into the same root, and the
#   importer directory the package misplaces is linked where nsys looks for it.
# - GUI parts are deleted: about 320 MB is left (measured: ~10 s, 170 MB downloaded).
# - Idempotent: an install whose `nsys --version` runs is kept as it is.
#
# Result: $NSYS_ROOT/bin/nsys (a link to the real binary) and $NSYS_ROOT/VERSION, found by
# torchscale.orchestration.profiling.nsys.find_nsys() through the same default cache location.
#
# Env: TORCHSCALE_NSYS_ROOT (default $HOME/.cache/torchscale-ci/nsys),
#      TORCHSCALE_NSYS_SUITE (default: this host's Debian codename, else bookworm),
#      TORCHSCALE_NSYS_MIRROR (default http://deb.debian.org/debian).
set -uo pipefail

NSYS_ROOT="${TORCHSCALE_NSYS_ROOT:-${HOME:-/root}/.cache/torchscale-ci/nsys}"
MIRROR="${TORCHSCALE_NSYS_MIRROR:-http://deb.debian.org/debian}"
PACKAGES=(nsight-systems nsight-systems-target libssh-4)
START=$SECONDS

say() { echo "install_nsys: $*"; }

give_up() {
    # one line, exit 0: CI goes on and the nsys test skips with this reason (kept in
    # $NSYS_ROOT/UNAVAILABLE for the test to show)
    if mkdir -p "$NSYS_ROOT" 2>/dev/null; then
        printf '%s\n' "$1" >"$NSYS_ROOT/UNAVAILABLE" 2>/dev/null
    fi
    say "nsys not installed: $1 (the nsys test will skip)"
    exit 0
}

if [ -x "$NSYS_ROOT/bin/nsys" ] && timeout 60 "$NSYS_ROOT/bin/nsys" --version >/dev/null 2>&1; then
    say "already installed: $(head -n1 "$NSYS_ROOT/VERSION" 2>/dev/null) ($NSYS_ROOT)"
    exit 0
fi

if [ -d "$NSYS_ROOT" ] && [ -n "$(ls -A "$NSYS_ROOT" 2>/dev/null)" ] \
        && [ ! -e "$NSYS_ROOT/VERSION" ] && [ ! -e "$NSYS_ROOT/UNAVAILABLE" ]; then
    # never delete a directory this script did not make
    say "nsys not installed: $NSYS_ROOT exists and was not made by this script (the nsys test will skip)"
    exit 0
fi

command -v apt-get >/dev/null 2>&1 || give_up "apt-get not found (not a Debian-like system)"
command -v dpkg >/dev/null 2>&1 || give_up "dpkg not found"
[ "$(dpkg --print-architecture 2>/dev/null)" = "amd64" ] || give_up "only amd64 is packaged"

SUITE="${TORCHSCALE_NSYS_SUITE:-}"
if [ -z "$SUITE" ] && [ -r /etc/os-release ]; then
    SUITE="$(. /etc/os-release && [ "${ID:-}" = debian ] && echo "${VERSION_CODENAME:-}")"
fi
SUITE="${SUITE:-bookworm}"

# unpack into a staging directory next to the root and move it into place at the end, so an
# interrupted or failed run never leaves a half install that looks complete
mkdir -p "$(dirname "$NSYS_ROOT")" || give_up "cannot create $(dirname "$NSYS_ROOT")"
STAGE="$NSYS_ROOT.partial"
rm -rf "$STAGE"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/torchscale-nsys.XXXXXX")" || give_up "mktemp failed"
trap 'rm -rf "$WORK" "$STAGE"' EXIT
mkdir -p "$WORK/lists/partial" "$WORK/archives/partial" "$WORK/debs" "$WORK/etc/sources.list.d"
printf 'deb %s %s main contrib non-free\n' "$MIRROR" "$SUITE" >"$WORK/etc/sources.list"

KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
APT_OPTS=(
    -o "Dir::Etc::SourceList=$WORK/etc/sources.list"
    -o "Dir::Etc::SourceParts=$WORK/etc/sources.list.d"
    -o "Dir::State::Lists=$WORK/lists"
    -o "Dir::Cache=$WORK/cache"
    -o "Dir::Cache::Archives=$WORK/archives"
    -o "Dir::State::status=/var/lib/dpkg/status"
    -o "APT::Sandbox::User=root"
    -o "Acquire::Retries=2"
    -o "Acquire::http::Timeout=30"
    -o "Debug::NoLocking=1"
)
[ -r "$KEYRING" ] && APT_OPTS+=(-o "Dir::Etc::Trusted=$KEYRING")

if ! timeout 300 apt-get "${APT_OPTS[@]}" -qq --error-on=any update >"$WORK/update.log" 2>&1; then
    why="$(grep -m1 -E '^(W|E|Err):' "$WORK/update.log" || tail -n1 "$WORK/update.log")"
    give_up "apt-get update of $MIRROR $SUITE failed: $why"
fi
if ! (cd "$WORK/debs" && timeout 600 apt-get "${APT_OPTS[@]}" -qq download "${PACKAGES[@]}" \
        >"$WORK/download.log" 2>&1); then
    why="$(grep -m1 -E '^(W|E|Err):' "$WORK/download.log" || tail -n1 "$WORK/download.log")"
    give_up "apt-get download ${PACKAGES[*]} failed: $why"
fi
for deb in "$WORK"/debs/*.deb; do
    dpkg -x "$deb" "$STAGE" || give_up "dpkg -x $(basename "$deb") failed"
done

LIB="$STAGE/usr/lib/x86_64-linux-gnu"
HOST="$STAGE/usr/lib/nsight-systems/host-linux-x64"
TARGET="$LIB/nsight-systems/target-linux-x64"
[ -x "$TARGET/nsys" ] || give_up "no nsys binary in the unpacked packages ($TARGET/nsys)"
[ -x "$HOST/QdstrmImporter" ] || give_up "no QdstrmImporter in the unpacked packages"
# fix 1: libssh-4 is unpacked into the same root; host-linux-x64/libssh.so links to
# ../../x86_64-linux-gnu/libssh.so.4, which now exists (checked here)
[ -e "$HOST/libssh.so" ] || give_up "libssh.so.4 missing after unpacking libssh-4"
# fix 2: nsys looks for the importer at target-linux-x64/../host-linux-x64
if [ ! -e "$LIB/nsight-systems/host-linux-x64" ]; then
    ln -s ../../nsight-systems/host-linux-x64 "$LIB/nsight-systems/host-linux-x64"
fi
# GUI parts, not needed to profile, import or export: the viewer, Qt WebEngine/Quick/Widgets
# stacks, Qt plugins, translations, resources, docs
rm -rf "$STAGE/usr/share" "$STAGE/usr/bin/nsys-ui" "$STAGE/usr/bin/nsight-sys" \
    "$STAGE/usr/lib/nsight-systems/bin/nsys-ui" "$HOST"/nsys-ui* "$HOST/libexec" \
    "$HOST/Plugins" "$HOST/resources" "$HOST/translations" "$HOST"/libQt6WebEngine* \
    "$HOST"/libQt6Quick* "$HOST"/libQt6Wayland* "$HOST/libQt6XcbQpa.so.6" \
    "$HOST/libQt6PrintSupport.so.6" "$HOST/libQt6UiTools.so.6" "$HOST"/libQt6OpenGL* \
    "$HOST/libQt6WebChannel.so.6" "$HOST/libQt6Positioning.so.6" "$HOST/libTimelineWidget.so" \
    "$HOST/libNvQtGui.so" "$HOST/libQtPropertyBrowser.so" "$HOST/libTimelineUIUtils.so" \
    "$HOST/ImportNvtxt" "$HOST/CrashReporter"

mkdir -p "$STAGE/bin"
ln -s ../usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys "$STAGE/bin/nsys"

if ! VERSION="$(timeout 60 "$STAGE/bin/nsys" --version 2>&1)"; then
    give_up "the unpacked nsys does not run: $(echo "$VERSION" | tail -n1)"
fi
VERSION="$(echo "$VERSION" | head -n1)"
printf '%s\n' "$VERSION" >"$STAGE/VERSION"
rm -rf "$NSYS_ROOT"  # only ever a previous install or an UNAVAILABLE note (checked above)
mv "$STAGE" "$NSYS_ROOT" || give_up "cannot move the install to $NSYS_ROOT"
say "installed $VERSION in $((SECONDS - START)) s, $(du -sh "$NSYS_ROOT" | cut -f1) ($NSYS_ROOT)"
exit 0
