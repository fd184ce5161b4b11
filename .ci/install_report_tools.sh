#!/usr/bin/env bash
# Debian packages the report tests use: chromium (a real headless browser loads the HTML
# report), poppler-utils (pdftotext/pdftoppm read the PDF report), libharfbuzz-subset0
# (WeasyPrint's font subsetting without a deprecation warning). Installed only when absent.
# Never fails CI: when apt cannot install them it says so in one line and the tests that need
# them skip with the reason (pytest -ra lists it).
set -uo pipefail

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v pdftotext >/dev/null 2>&1 || need+=(poppler-utils)
ldconfig -p 2>/dev/null | grep -q libharfbuzz-subset || need+=(libharfbuzz-subset0)
if [ "${#need[@]}" -eq 0 ]; then
    echo "install_report_tools: chromium, pdftotext present"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_report_tools: no apt-get; missing ${need[*]} (the browser/PDF text tests will skip)"
    exit 0
fi
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n)
    else
        echo "install_report_tools: not root and no sudo; missing ${need[*]} (tests will skip)"
        exit 0
    fi
fi
start=$SECONDS
for attempt in 1 2; do
    if "${SUDO[@]}" apt-get update -qq >/dev/null 2>&1 &&
        DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq \
            --no-install-recommends "${need[@]}" >/dev/null 2>&1; then
        echo "install_report_tools: installed ${need[*]} in $((SECONDS - start)) s"
        exit 0
    fi
    echo "install_report_tools: apt attempt $attempt failed"
done
echo "install_report_tools: could not install ${need[*]} (the browser/PDF text tests will skip)"
exit 0
