#!/usr/bin/env bash
# Makes the JPEGs of imaging/testdata/sampling: one small photo-like image
# (64x48, a colour gradient with a few sharp edges, drawn below; no
# outside source) encoded by cjpeg (libjpeg-turbo 2.1.5, Debian's
# libjpeg-turbo-progs) with sampling factors Go's image/jpeg refuses, as
# found in libjxl-testdata's flower.png.im_q85_*.jpg, and a few it reads.
# Run from this folder: bash make.sh
set -euo pipefail
/usr/bin/python3 - <<'PY'
w, h = 64, 48
rows = []
for y in range(h):
    row = bytearray()
    for x in range(w):
        r, g, b = 4 * x, 5 * y, 255 - 2 * (x + y)
        if (x // 16 + y // 12) % 2:
            r, g = 255 - r, 255 - g
        row += bytes((r % 256, g % 256, max(b, 0)))
    rows.append(bytes(row))
with open("source.ppm", "wb") as f:
    f.write(b"P6\n%d %d\n255\n" % (w, h))
    f.write(b"".join(rows))
PY
enc() { cjpeg -quality 90 "${@:2}" source.ppm >"$1.jpg"; }
enc asymmetric -sample 2x2,2x1,1x2        # each component its own factors
enc luma-subsampled -sample 1x1,2x2,2x2   # chroma finer than luma
enc 411 -sample 4x1,1x1,1x1               # 4:1:1
enc 410 -sample 4x2,1x1,1x1               # 4:1:0
enc rgb-blue-subsampled -rgb -sample 2x2,2x2,1x1
enc 440 -sample 1x2,1x1,1x1               # Go reads these
enc 420-progressive -sample 2x2,1x1,1x1 -progressive
rm source.ppm
