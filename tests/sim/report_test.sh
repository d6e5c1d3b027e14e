#!/usr/bin/env bash
# Opens `gantry simulate --out` reports in headless Chromium: the page renders (a screenshot that is
# not blank), every chart is in the rendered DOM, and the page fetched nothing (no request in the
# browser's network log was initiated by the page; the page has no src/href/url() reference).
# Usage: report_test.sh GANTRY CHROMIUM SOURCE_DIR
set -euo pipefail
gantry=$1
chromium=$2
src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

check() {  # name, simulation file, charts...
  local name=$1 file=$2
  shift 2
  local out="$work/$name"
  "$gantry" simulate "$file" --out "$out" >/dev/null
  local page="$out/report.html"
  if grep -Eq '(src|href)=|url\(|@import|<script|<link' "$page"; then
    echo "FAIL $name: report.html references outside resources" >&2
    return 1
  fi
  local flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
               --disable-background-networking --disable-component-update --disable-sync
               --disable-default-apps --user-data-dir="$work/profile-$name")
  "$chromium" "${flags[@]}" --log-net-log="$work/$name-net.json" --window-size=1000,2600 \
    --screenshot="$work/$name.png" "file://$page" >/dev/null 2>&1
  "$chromium" "${flags[@]}" --dump-dom "file://$page" >"$work/$name-dom.html" 2>/dev/null
  for chart in "$@"; do
    if ! python3 - "$work/$name-dom.html" "$chart" <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
m = re.search(r'<figure id="%s">(.*?)</figure>' % re.escape(sys.argv[2]), dom, re.S)
ok = m and "<svg" in m.group(1) and ("<polyline" in m.group(1))
sys.exit(0 if ok else 1)
PY
    then
      echo "FAIL $name: chart $chart missing from the rendered DOM" >&2
      return 1
    fi
  done
  # Requests the page made (an initiator other than the browser itself) for anything but itself.
  # (The browser's own background requests - time, updates, accounts - carry no page initiator.)
  if ! python3 - "$work/$name-net.json" "file://$page" <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
fetched = set()
for e in log["events"]:
    p = e.get("params", {})
    if "url" in p and "method" in p and p.get("initiator", "not an origin") != "not an origin":
        if p["url"] != sys.argv[2]:
            fetched.add(p["url"])
for u in sorted(fetched):
    print("fetched by the page:", u, file=sys.stderr)
sys.exit(1 if fetched else 0)
PY
  then
    echo "FAIL $name: the page fetched something" >&2
    return 1
  fi
  python3 - "$work/$name.png" <<'PY'
# Decodes the PNG (8-bit RGB/RGBA, no interlace) and requires a share of non-white pixels.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, color = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
assert depth == 8 and color in (2, 6), "unexpected PNG format"
bpp = 3 if color == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
ink = 0
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        if line[x] < 200 or line[x + 1] < 200 or line[x + 2] < 200:
            ink += 1
    prev = line
share = ink / (w * h)
if share < 0.005:
    sys.exit("blank screenshot: %.4f%% of pixels drawn" % (100 * share))
print("screenshot %dx%d, %.2f%% of pixels drawn" % (w, h, 100 * share))
PY
  echo "ok $name"
}

check timeline "$src/examples/sim/teams-day.yaml" chart-queues chart-utilization chart-pending \
  chart-waits chart-evictions
check inflation "$src/tests/sim/inflation-small.yaml" chart-queues chart-utilization \
  chart-pending chart-waits chart-evictions chart-inflation
