# netmut.py SEED OUTDIR - mutants of a network file (fuzz/mutate/run.sh):
# every layer option, input size and connection set to odd values (0, -1,
# 2^31, 2^63 - 1, wrong types), duplicate and bad names, tensor shapes and
# offsets, LSTM states of other batch sizes, NaN weights. Written as format
# 1.1 (no checksum), so each reaches the checks behind it.
import json, struct, sys, os, copy
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
raw = open(src, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
head = json.loads(raw[8:8+n]); data = raw[8+n:]
base = os.path.basename(src).split('.')[0]
def write(name, head, data, arch=None):
    h = copy.deepcopy(head)
    m = h['__metadata__']
    m.pop('checksum', None); m['format_version'] = '1.1'
    if arch is not None: m['architecture'] = json.dumps(arch)
    t = json.dumps(h).encode()
    t += b' ' * ((8 - len(t) % 8) % 8)
    open(os.path.join(out, base + '_' + name + '.safetensors'), 'wb').write(struct.pack('<Q', len(t)) + t + data)
arch = json.loads(head['__metadata__']['architecture'])
write('plain', head, data, arch)
ivals = [0, -1, 1, 2, 7, 1000003, 2**31 - 1, 2**31, 2**32 + 1, 2**53, 2**62, -2**63, 2**63 - 1]
fvals = [0.0, -1.0, 1e-320, 1e308, -1e308, 0.5, 2.0, 1e10]
k = 0
def mutants(v):
    if isinstance(v, bool): return [not v, 0]
    if isinstance(v, int): return ivals + [1.5, "x", None, [], {}]
    if isinstance(v, float): return fvals + [0, 1, "x", None]
    if isinstance(v, str): return ["", "x", "a" * 300, "same", "causal", "auto", "none", "zscore", "sequence", "last", "SSCB", "CBT"]
    if isinstance(v, list): return [[], [0] * len(v), [-1] * len(v), [2**31] * len(v), v + v[:1], [1.5] * len(v)]
    return [None]
for li, layer in enumerate(arch['Layers']):
    for key, v in layer.items():
        if key in ('Type',): continue
        cands = mutants(v)
        if isinstance(v, list):
            for j in range(len(v)):
                for m in ivals:
                    a = copy.deepcopy(arch); a['Layers'][li][key][j] = m
                    write('L%d_%s_%d_%d' % (li, key, j, k), head, data, a); k += 1
        for m in cands:
            a = copy.deepcopy(arch); a['Layers'][li][key] = m
            write('L%d_%s_%d' % (li, key, k), head, data, a); k += 1
for ii, inp in enumerate(arch['Inputs']):
    for j in range(len(inp['Size'])):
        for m in ivals:
            a = copy.deepcopy(arch); a['Inputs'][ii]['Size'][j] = m
            write('I%d_%d_%d' % (ii, j, k), head, data, a); k += 1
# connections
a = copy.deepcopy(arch); a['Connections'] = a['Connections'] + a['Connections'][:1]; write('conn_dup', head, data, a)
a = copy.deepcopy(arch)
if a['Connections']:
    c = a['Connections'][-1]; a['Connections'].append({'Source': c['Destination'], 'Destination': a['Connections'][0]['Source']}); write('conn_cycle', head, data, a)
    a = copy.deepcopy(arch); a['Connections'] = a['Connections'][1:]; write('conn_drop', head, data, a)
    a = copy.deepcopy(arch); c = a['Connections'][0]; c['Destination'] = c['Source']; write('conn_self', head, data, a)
    a = copy.deepcopy(arch); c = a['Connections'][0]; c['Source'] = c['Source'] + '/out9'; write('conn_port', head, data, a)
    a = copy.deepcopy(arch); c = a['Connections'][0]; c['Destination'] = c['Destination'] + '/in99'; write('conn_port2', head, data, a)
a = copy.deepcopy(arch); a['Layers'][1]['Name'] = a['Layers'][0]['Name']; write('dupname', head, data, a)
a = copy.deepcopy(arch); a['Layers'][1]['Name'] = 'a/b'; write('slashname', head, data, a)
a = copy.deepcopy(arch); a['Layers'][1]['Name'] = ''; write('emptyname', head, data, a)
a = copy.deepcopy(arch); a['Inputs'] = []; write('noinputs', head, data, a)
a = copy.deepcopy(arch); a['Inputs'] = a['Inputs'] * 3; write('inputs3', head, data, a)
# tensor entries: shapes/offsets
for key, e in head.items():
    if key == '__metadata__': continue
    for j in range(len(e['shape'])):
        for m in [0, -1, 2**32, 2**62, 2**63 - 1]:
            h = copy.deepcopy(head); h[key]['shape'][j] = m; write('T_%s_%d_%d' % (key.replace('/', '.'), j, k), h, data, arch); k += 1
    h = copy.deepcopy(head); h[key]['shape'] = []; write('T_%s_noshape' % key.replace('/', '.'), h, data, arch)
    h = copy.deepcopy(head); h[key]['dtype'] = 'F64'; write('T_%s_f64' % key.replace('/', '.'), h, data, arch)
    h = copy.deepcopy(head); h[key]['data_offsets'] = [2**63, 2**63 + 4]; write('T_%s_offbig' % key.replace('/', '.'), h, data, arch)
print(k)
# consistent rewrite: tensors with new shapes/data
def tensors():
    t = {}
    for key, e in head.items():
        if key == '__metadata__': continue
        b, f = e['data_offsets']; t[key] = [e['dtype'], list(e['shape']), data[b:f]]
    return t
def rebuild(name, t, arch=arch):
    h = {'__metadata__': dict(head['__metadata__'])}
    off = 0; d = b''
    for key, (dt, sh, by) in t.items():
        h[key] = {'dtype': dt, 'shape': sh, 'data_offsets': [off, off + len(by)]}; off += len(by); d += by
    write(name, h, d, arch)
for key in list(tensors()):
    if key.startswith('state/'):
        for bsz in [0, 2, 3, 1000]:
            t = tensors(); dt, sh, by = t[key]
            # shape is reversed dims: [B, H] for dims (H, B)
            if len(sh) == 2:
                es = 4 if dt == 'F32' else 8
                t[key] = [dt, [bsz, sh[1]], (by[:sh[1] * es] * max(bsz, 1))[:bsz * sh[1] * es]]
                rebuild('S_%s_b%d' % (key.replace('/', '.'), bsz), t)
    # NaN / Inf values in every tensor
    t = tensors(); dt, sh, by = t[key]
    if len(by) >= 4:
        t[key] = [dt, sh, (b'\x00\x00\xc0\x7f' * (len(by) // 4))]
        rebuild('NaN_%s' % key.replace('/', '.'), t)
