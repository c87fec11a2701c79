# immut.py OUTDIR - image files for the image datastore (fuzz/mutate/run.sh):
# PNG of every color type and 16-bit depth, palettes short or missing,
# forged IHDR and JPEG SOF sizes, CMYK and progressive JPEG, empty files,
# a JPEG named .png, each truncated along its length and with bytes set.
import os, sys, struct, zlib, random, io
from PIL import Image
import numpy as np
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
seeds = {}
rng = np.random.default_rng(1)
def save(name, im, fmt, **kw):
    b = io.BytesIO(); im.save(b, fmt, **kw); seeds[name] = b.getvalue()
a = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
save('rgb.png', Image.fromarray(a), 'PNG')
save('rgba.png', Image.fromarray(np.dstack([a, a[..., :1]])), 'PNG')
save('l.png', Image.fromarray(a[..., 0]), 'PNG')
save('la.png', Image.fromarray(np.dstack([a[..., 0], a[..., 1]]), 'LA'), 'PNG')
save('p.png', Image.fromarray(a).convert('P'), 'PNG')
pt = Image.fromarray(a).convert('P'); pt.info['transparency'] = 0
save('ptrns.png', pt, 'PNG', transparency=0)
save('one.png', Image.fromarray(a[..., 0] > 128), 'PNG')
save('i16.png', Image.fromarray((a[..., 0].astype(np.uint16) * 257)), 'PNG')
save('rgb.jpg', Image.fromarray(a), 'JPEG')
save('l.jpg', Image.fromarray(a[..., 0]), 'JPEG')
save('prog.jpg', Image.fromarray(a), 'JPEG', progressive=True)
save('cmyk.jpg', Image.fromarray(a).convert('CMYK'), 'JPEG')
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
def png(w, h, depth, ctype, raw, interlace=0, extra=b''):
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, interlace)) + extra + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
# 16-bit RGB, 16-bit gray+alpha, 16-bit RGBA
for ct, ch in [(2, 3), (4, 2), (6, 4), (0, 1)]:
    w, h = 3, 2
    raw = b''.join(b'\x00' + bytes(rng.integers(0, 256, w * ch * 2, dtype=np.uint8)) for _ in range(h))
    seeds['d16_%d.png' % ct] = png(w, h, 16, ct, raw)
# huge declared dims with tiny data
for w, h in [(1 << 20, 1 << 20), (0x7fffffff, 1), (1, 0x7fffffff), (65536, 65536), (1000000, 1), (0, 5), (46341, 46341)]:
    seeds['huge_%dx%d.png' % (w, h)] = png(w, h, 8, 2, b'\x00' * 10)
# tRNS on gray 16-bit; bad bit depth combos
seeds['bad_depth.png'] = png(2, 2, 3, 2, b'\x00' * 20)
seeds['pal_no_plte.png'] = png(2, 2, 8, 3, b'\x00' * 6)
seeds['pal_short.png'] = png(2, 2, 8, 3, b'\x00\x05\x05\x00\x05\x05', extra=chunk(b'PLTE', b'\x01\x02\x03'))
seeds['interlace16.png'] = png(3, 3, 16, 0, b''.join(b'\x00' + b'\x12\x34' * 3 for _ in range(9)), interlace=1)
# JPEG SOF size edits
def jpeg_resize(b, w, h):
    b = bytearray(b)
    i = 2
    while i < len(b) - 9:
        if b[i] == 0xFF and b[i + 1] in (0xC0, 0xC1, 0xC2):
            struct.pack_into('>HH', b, i + 5, h, w); return bytes(b)
        i += 2 + struct.unpack('>H', b[i + 2:i + 4])[0]
    return bytes(b)
for w, h in [(65535, 65535), (0, 5), (5, 0), (1, 65535), (8, 5), (200, 200)]:
    seeds['sof_%dx%d.jpg' % (w, h)] = jpeg_resize(seeds['rgb.jpg'], w, h)
    seeds['sofp_%dx%d.jpg' % (w, h)] = jpeg_resize(seeds['prog.jpg'], w, h)
seeds['empty.png'] = b''; seeds['empty.jpg'] = b''
seeds['jpg_as_png.png'] = seeds['rgb.jpg']; seeds['png_as_jpg.jpg'] = seeds['rgb.png']
for k, v in seeds.items(): open(os.path.join(out, k), 'wb').write(v)
r = random.Random(5)
n = 0
for k, v in list(seeds.items()):
    if k.startswith(('huge', 'sof', 'empty')): continue
    base, ext = k.rsplit('.', 1)
    step = max(1, len(v) // 60)
    for cut in range(0, len(v), step):
        open(os.path.join(out, '%s_cut%d.%s' % (base, cut, ext)), 'wb').write(v[:cut]); n += 1
    for j in range(60):
        b = bytearray(v)
        for _ in range(r.randint(1, 4)):
            p = r.randrange(len(b)); b[p] = r.choice([0, 0xff, 0x7f, 0x80, r.randrange(256)])
        open(os.path.join(out, '%s_flip%d.%s' % (base, j, ext)), 'wb').write(bytes(b)); n += 1
print(len(seeds), n)
