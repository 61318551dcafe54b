#!/usr/bin/python3
"""Reference decoder for data's decoder tests: Pillow (Debian's python3-pil,
which decodes JPEG with libjpeg-turbo and PNG with zlib).

For every image path on the command line it writes to standard output one
line "<width> <height> <mode>\\n" followed by width*height*4 bytes of 8-bit
RGBA, non-premultiplied, after ImageOps.exif_transpose (bicyc applies the
EXIF Orientation tag too). Pillow reads 16-bit RGB(A) PNGs as 8-bit by
keeping each sample's high byte.
"""
import sys

from PIL import Image, ImageOps

out = sys.stdout.buffer
for path in sys.argv[1:]:
    with Image.open(path) as im:
        mode = im.mode
        im = ImageOps.exif_transpose(im).convert("RGBA")
        out.write(b"%d %d %s\n" % (im.width, im.height, mode.encode()))
        out.write(im.tobytes())
out.flush()
