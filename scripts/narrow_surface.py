#!/usr/bin/env python3
"""Re-derive the library's public surface (tests/public_surface.txt, docs/architecture.md).

Narrows every bare `pub` item of the library (not main.rs, cmd/, harness/ or test code) to
pub(crate), then widens again what rustc's errors point at (the definition span of a private
item, a private method's label, a re-export), round after round, until the binary, the tests,
the benches and the fuzz targets compile. Where an error carries no span it widens by name, which
can widen a same-named item too: try narrowing those by hand afterwards. Then `cargo clippy
--all-targets` reports what became dead, and `PABLO_BLESS_SURFACE=1 cargo test --test all
architecture::` rewrites the list. Run from the repository root:
  scripts/narrow_surface.py narrow   # bare pub items -> pub(crate)
  scripts/narrow_surface.py widen    # check, widen, repeat until clean (about 10 rounds)
"""
import json, os, re, subprocess, sys

ROOT = os.getcwd()
ITEM = re.compile(r'^(\s*)pub ((?:async |unsafe |const |extern "C" )*(?:fn|struct|enum|mod|const|static|trait|type|union|use)\b)')

def lib_files():
    for d, _, fs in os.walk('src'):
        for f in fs:
            p = os.path.join(d, f)
            if not p.endswith('.rs'): continue
            if p == 'src/main.rs' or p.startswith('src/cmd/') or p.startswith('src/harness/') or p.startswith('src/tests/') or p.endswith('/tests.rs'):
                continue
            yield p

def narrow():
    n = 0
    for p in lib_files():
        lines = open(p).read().split('\n')
        for i, l in enumerate(lines):
            if p == 'src/lib.rs' and 'mod harness' in l: continue
            m = ITEM.match(l)
            if m:
                lines[i] = ITEM.sub(r'\1pub(crate) \2', l, count=1); n += 1
        open(p, 'w').write('\n'.join(lines))
    print('narrowed', n)

ANY_ITEM = re.compile(r'^\s*(?:pub(?:\([^)]*\))? )?(?:async |unsafe |const )*(?:fn|struct|enum|mod|const|static|trait|type|union|use|impl)\b')

def widen_line(path, line):
    """Widen the pub(crate) item on `line` (1-based), or the multi-line `use` it sits in."""
    if not path.startswith('src/'): return False
    lines = open(path).read().split('\n')
    j = line - 1
    if j >= len(lines): return False
    def put(k):
        lines[k] = lines[k].replace('pub(crate) ', 'pub ', 1)
        open(path, 'w').write('\n'.join(lines)); return True
    if ANY_ITEM.match(lines[j]):
        return put(j) if re.match(r'^\s*pub\(crate\) ', lines[j]) else False
    for k in range(j - 1, max(j - 60, -1), -1):
        l = lines[k]
        if l.strip() == '' or l.rstrip().endswith(';') or l.rstrip().endswith('}'):
            return False
        if ANY_ITEM.match(l):
            return put(k) if re.match(r'^\s*pub\(crate\) use ', l) else False
    return False

def widen_by_name(name, kinds=('fn','struct','enum','mod','const','static','trait','type')):
    done = False
    for p in lib_files():
        lines = open(p).read().split('\n'); ch = False
        for j, l in enumerate(lines):
            if re.match(r'^\s*pub\(crate\) (?:async |unsafe |const )*(?:%s) %s\b' % ('|'.join(kinds), re.escape(name)), l):
                lines[j] = l.replace('pub(crate) ', 'pub ', 1); ch = True
        if ch: open(p, 'w').write('\n'.join(lines)); done = True
    return done

def widen_in_impl(ty, name):
    done = False
    for p in lib_files():
        lines = open(p).read().split('\n'); ch = False; inside = False
        for j, l in enumerate(lines):
            if re.match(r'^impl(?:<[^>]*>)? %s\b' % re.escape(ty), l): inside = True; continue
            if inside and l.startswith('}'): inside = False; continue
            if inside and re.match(r'^\s*pub\(crate\) (?:async |unsafe |const )*fn %s\b' % re.escape(name), l):
                lines[j] = l.replace('pub(crate) ', 'pub ', 1); ch = True
        if ch: open(p, 'w').write('\n'.join(lines)); done = True
    return done

def spans(msg):
    for c in msg.get('children', []):
        for s in c.get('spans', []):
            yield c['message'], s
    for s in msg.get('spans', []):
        yield (s.get('label') or msg['message']), s

def check():
    msgs = []
    for cmd, cwd in ((['cargo', 'check', '--all-targets', '--message-format=json'], ROOT),
                     (['cargo', 'check', '--bins', '--message-format=json'], os.path.join(ROOT, 'fuzz'))):
        env = dict(os.environ)
        if cwd.endswith('fuzz'): env['CARGO_TARGET_DIR'] = os.path.join(ROOT, 'target/fuzz')
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env).stdout
        for l in out.splitlines():
            try: j = json.loads(l)
            except Exception: continue
            if j.get('reason') == 'compiler-message':
                m = j['message']
                for sp in [x for c in m.get('children', []) for x in c.get('spans', [])] + m.get('spans', []):
                    fn = os.path.normpath(os.path.join(cwd, sp['file_name']))
                    sp['file_name'] = os.path.relpath(fn, ROOT) if fn.startswith(ROOT) else fn
                msgs.append(m)
    return msgs

def widen():
    for rnd in range(200):
        msgs = check()
        errs = [m for m in msgs if m['level'] == 'error' or (m.get('code') or {}).get('code') in ('private_interfaces', 'private_bounds')]
        errs = [m for m in errs if not m['message'].startswith('aborting') and 'could not compile' not in m['message']]
        if not errs:
            print('clean after', rnd, 'rounds'); return
        changed = 0; unhandled = []
        for m in errs:
            code = (m.get('code') or {}).get('code')
            text = m['message']; hit = False
            for cm, s in spans(m):
                if 'defined here' in (cm or '') or 'only usable at visibility' in cm or 'consider marking' in cm:
                    fn = s['file_name']
                    if fn.startswith(ROOT): fn = os.path.relpath(fn, ROOT)
                    if widen_line(fn, s['line_start']): changed += 1; hit = True
            if not hit:
                mi = re.search(r'no (?:method|function or associated item) named `([A-Za-z_0-9]+)` found for (?:\w+ )*`(?:[\w:]+::)?([A-Za-z_0-9]+)', text)
                if mi and widen_in_impl(mi.group(2), mi.group(1)):
                    changed += 1; hit = True; print('  by impl', mi.group(2), mi.group(1))
            if not hit:
                mm = re.search(r'`([A-Za-z_0-9]+)` is only public within the crate', text) or \
                     re.search(r'(?:function|struct|enum|module|constant|trait|type alias|static|method|associated function|import) `([A-Za-z_0-9]+)` is private', text)
                if mm and widen_by_name(mm.group(1)): changed += 1; hit = True; print('  by name', mm.group(1), '|', text[:100])
            if not hit: unhandled.append((code, text))
        print('round', rnd, 'errors', len(errs), 'widened', changed, flush=True)
        if not changed:
            for u in unhandled[:30]: print('  unhandled', u)
            return

if __name__ == '__main__':
    {'narrow': narrow, 'widen': widen}[sys.argv[1]]()
