# idxmut.py OUTDIR - IDX files (fuzz/mutate/run.sh): every element type,
# unknown types, 0 and 255 dims, dims whose product overflows, trailing
# bytes, gzip members, gzip trailers cut and bits flipped, each truncated
# at every length, plain and gzip.
import os, sys, struct, gzip, random
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
def idx(t, dims, data): return bytes([0, 0, t, len(dims)]) + b''.join(struct.pack('>I', d) for d in dims) + data
seeds = {'u8': idx(8, [3, 2, 2], bytes(range(12))), 'f64': idx(0x0E, [2], struct.pack('>dd', 1.5, -2)),
         'i16': idx(0x0B, [5], bytes(10)), 'i32': idx(0x0C, [1, 1], bytes(4)), 'f32': idx(0x0D, [3], bytes(12)),
         'zero': idx(8, [0, 5], b''), 'zero2': idx(8, [5, 0, 7], b'')}
for dims in ([0xFFFFFFFF], [0xFFFFFFFF, 0xFFFFFFFF], [0x10000, 0x10000, 0x10000], [0x80000000, 0x80000000, 4], [1] * 9, [1] * 8):
    seeds['hugedims%d' % len(seeds)] = idx(8, dims, bytes(16))
for t in list(range(0, 20)) + [0xFF]:
    seeds['type%02x' % t] = idx(t, [2], bytes(16))
seeds['nd0'] = bytes([0, 0, 8, 0]) + bytes(8)
seeds['nd255'] = bytes([0, 0, 8, 255]) + bytes(64)
seeds['magic'] = bytes([1, 0, 8, 1]) + bytes(8)
seeds['trail'] = idx(8, [2], bytes(3))
r = random.Random(3)
items = list(seeds.items())
for k, v in items:
    seeds[k + '.gz'] = gzip.compress(v)
for k, v in list(seeds.items()):
    open(os.path.join(out, k), 'wb').write(v)
    for cut in range(len(v)):
        open(os.path.join(out, '%s_cut%d' % (k, cut)), 'wb').write(v[:cut])
g = gzip.compress(seeds['u8'])
open(os.path.join(out, 'gz_trailing'), 'wb').write(g + b'garbage')
open(os.path.join(out, 'gz_two_members'), 'wb').write(g + g)
open(os.path.join(out, 'gz_then_zeros'), 'wb').write(g + bytes(100))
for j in range(200):
    b = bytearray(g)
    p = r.randrange(len(b)); b[p] ^= 1 << r.randrange(8)
    open(os.path.join(out, 'gzflip%d' % j), 'wb').write(bytes(b))
