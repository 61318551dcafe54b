"""JPEG photos with every EXIF orientation, for data's decoder tests.

Run with Debian's python3-pil (9.4):
    /usr/bin/python3 gen.py

upright.png is a 40x24 picture with four differently coloured quadrants and
a dark bar along its top edge. orient-N.jpg (N = 1..8) stores that picture
turned the way a camera whose EXIF Orientation tag says N stores it, with the
tag set to N, so showing it upright means applying the tag. Each file is
checked here with Pillow's ImageOps.exif_transpose, what Python services do
to photos, before it is kept: a decoder that ignores the tag gets the wrong
size (N >= 5) or the wrong quadrants.
"""
from PIL import Image, ImageChops, ImageOps, ImageStat

W, H = 40, 24
upright = Image.new("RGB", (W, H))
for x in range(W):
    for y in range(H):
        left, top = x < W // 2, y < H // 2
        colour = {(True, True): (220, 30, 30), (False, True): (30, 200, 40),
                  (True, False): (40, 60, 210), (False, False): (235, 235, 220)}[(left, top)]
        if y < 4:
            colour = (20, 20, 20)
        upright.putpixel((x, y), colour)
upright.save("upright.png")

# How each tag's stored pixels come from the upright picture: the inverse of
# the transpose exif_transpose applies for that tag.
stored_from_upright = {
    1: None,
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}
for tag, method in stored_from_upright.items():
    stored = upright if method is None else upright.transpose(method)
    exif = Image.Exif()
    exif[0x0112] = tag
    name = f"orient-{tag}.jpg"
    stored.save(name, quality=95, subsampling=0, exif=exif)
    shown = ImageOps.exif_transpose(Image.open(name)).convert("RGB")
    assert shown.size == (W, H), (name, shown.size)
    diff = ImageStat.Stat(ImageChops.difference(shown, upright)).mean
    assert max(diff) < 3, (name, diff)
