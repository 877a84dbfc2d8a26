#!/usr/bin/env python3
"""A/B table from bench/cuda/ab.sh's JSON lines (ab.tgz unpacked into DIR): rows (op, shape,
dtype), columns variant x round (µs).   ab_table.py DIR"""
import glob, json, os, re, sys
d = sys.argv[1]
cells, names = {}, []
for f in sorted(glob.glob(os.path.join(d, 'ab_*.jsonl'))):
    m = re.match(r'ab_(.+)_(bf16|fp32|fp16)_([ab])\.jsonl', os.path.basename(f))
    name, dt, rnd = m.groups()
    if name not in names: names.append(name)
    for line in open(f):
        r = json.loads(line)
        cells[(r['op'], f"{r['m']}x{r['n']}", r['dtype'], name, rnd)] = (r['us'], r.get('max_err', 0))
order = ['base', 'new'] + sorted(n for n in names if n not in ('base', 'new'))
order = [n for n in order if n in names]
keys = []
for k in cells:
    if k[:3] not in keys: keys.append(k[:3])
print('| op | shape | dtype | ' + ' | '.join(f'{n} a | {n} b' for n in order) + ' | new/base |')
print('|' + '---|' * (4 + 2 * len(order)))
for op, shape, dt in keys:
    if op == 'copy': continue
    vals = []
    for n in order:
        for rnd in 'ab':
            c = cells.get((op, shape, dt, n, rnd))
            vals.append(f'{c[0]:.1f}' if c else '—')
    b = [cells.get((op, shape, dt, 'base', r)) for r in 'ab']
    nw = [cells.get((op, shape, dt, 'new', r)) for r in 'ab']
    ratio = f'{min(x[0] for x in nw)/min(x[0] for x in b):.3f}' if all(b) and all(nw) else ''
    print(f'| {op} | {shape} | {dt} | ' + ' | '.join(vals) + f' | {ratio} |')
errs = [(k, v[1]) for k, v in cells.items() if v[1] and v[1] > (1e-2 if k[2] != 'float32' else 1e-5)]
print('\nlarge errors:', errs[:10])
