#!/usr/bin/env python3
"""User-space instructions per NULL round trip spent in some crates' code.

`scripts/callgrind-null.sh` counts the whole round trip; this script says
how much of it runs the code of the crates named by --crates (a regular
expression over function names; default: the engine and the wire codecs).
With fat LTO most of that code is inlined into other crates' functions, so
callgrind's per-function view cannot say it: here every instruction of the
binary is attributed by its inline stack (llvm-symbolizer).

  * An instruction counts if any frame of its inline stack is a function of
    those crates (a function whose name mentions them, so drop glue and
    generic code instantiated for their types count too).
  * A call from such an instruction to a function that does not is counted
    with everything that function does (malloc, a hash table insert, ...).
    Code of those crates reached again further down such a call counts
    twice: the figure is meant for crates that other code calls (the
    engine, the codecs, a provider), not for the runtime or the RPC layer
    at the top of every stack, whose "own" part is the meaningful one.

Like callgrind-null.sh: `rpcrdma bench loop` runs LOW and HIGH round trips
under callgrind (--dump-instr=yes); the difference divided by HIGH - LOW is
one round trip, both ends together.

Usage: scripts/callgrind-share.py [--binary target/release/rpcrdma]
         [--crates REGEX] [--keep DIR] [--detail REGEX] [--low N --high N]
Needs valgrind and llvm-symbolizer (Debian: valgrind, llvm).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile


def run_callgrind(binary, path, n, out):
    if not os.path.exists(out):
        subprocess.run(
            ['valgrind', '--tool=callgrind', '--dump-instr=yes', '--compress-strings=no',
             '--compress-pos=no', f'--callgrind-out-file={out}', '-q', binary, 'bench', 'loop',
             '--path', path, '--round-trips', str(n)],
            stdout=subprocess.DEVNULL, check=True)
    return out


def parse(f, binary):
    """Self cost per (address, function) and call cost per (address, callee)."""
    selfc, calls = collections.Counter(), collections.Counter()
    ob = fn = cfn = None
    pending_call = False
    with open(f) as fh:
        for line in fh:
            if line.startswith('ob='):
                ob = line[3:].strip()
            elif line.startswith('fn='):
                fn, cfn = line[3:].strip(), None
            elif line.startswith('cfn='):
                cfn = line[4:].strip()
            elif line.startswith('calls='):
                pending_call = True
            elif line.startswith('0x'):
                parts = line.split()
                cost = int(parts[2]) if len(parts) > 2 else 0
                if os.path.realpath(ob or '') != binary:
                    pending_call = False
                    continue
                addr = int(parts[0], 16)
                if pending_call:
                    calls[(addr, cfn or fn)] += cost
                    pending_call = False
                else:
                    selfc[addr] += cost
    return selfc, calls


def symbolize(binary, addrs):
    out = subprocess.run(['llvm-symbolizer', f'--obj={binary}'],
                         input=''.join(f'{a:#x}\n' for a in addrs),
                         capture_output=True, text=True, check=True).stdout
    stacks = {}
    for a, block in zip(addrs, out.split('\n\n')):
        lines = block.strip().split('\n')
        stacks[a] = [(lines[i], lines[i + 1] if i + 1 < len(lines) else '')
                     for i in range(0, len(lines), 2)]
    return stacks


RUST_ESCAPES = [('$LT$', '<'), ('$GT$', '>'), ('$u20$', ' '), ('$C$', ','), ('$RF$', '&'),
                ('$BP$', '*'), ('$u7b$', '{'), ('$u7d$', '}'), ('$u27$', "'"), ('$LP$', '('),
                ('$RP$', ')'), ('..', '::')]


def pretty(name):
    """A legacy-mangled Rust name as the demangler leaves it, made readable."""
    name = re.sub(r'::h[0-9a-f]{16}$', '', name)
    for k, v in RUST_ESCAPES:
        name = name.replace(k, v)
    return re.sub(r'(^|::)_<', r'\1<', name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--binary', default='target/release/rpcrdma')
    ap.add_argument('--path', default='rdma', help='bench loop path (rdma, oncrpc-tcp, raw-tcp)')
    ap.add_argument('--crates', default=r'rpcrdma_(engine|wire)')
    ap.add_argument('--keep', help='keep (and reuse) the callgrind profiles in this directory')
    ap.add_argument('--detail', help='also list source lines under outermost frames matching this')
    ap.add_argument('--low', type=int, default=1000)
    ap.add_argument('--high', type=int, default=3000)
    a = ap.parse_args()
    binary = os.path.realpath(a.binary)
    if not os.access(binary, os.X_OK):
        sys.exit(f'callgrind-share: {a.binary} is not an executable (cargo build --release -p rpcrdma-cli)')
    ours = re.compile(a.crates)
    keep = a.keep or tempfile.mkdtemp()
    os.makedirs(keep, exist_ok=True)
    lo = parse(run_callgrind(binary, a.path, a.low, f'{keep}/instr.{a.path}.{a.low}'), binary)
    hi = parse(run_callgrind(binary, a.path, a.high, f'{keep}/instr.{a.path}.{a.high}'), binary)
    addrs = sorted(set(hi[0]) | {addr for addr, _ in hi[1]})
    stacks = symbolize(binary, addrs)

    def frames(addr):
        return [f for f, _ in stacks.get(addr, []) if ours.search(f)]

    def outermost(addr):
        fr = frames(addr)
        return pretty(fr[-1]) if fr else None

    def where(addr):
        st = stacks.get(addr, [])
        loc = next((l for f, l in st if ours.search(f)), '?')
        return loc.split('/crates/')[-1]

    n = a.high - a.low
    own = out = 0
    by_frame, by_callee, detail = collections.Counter(), collections.Counter(), collections.Counter()
    for addr, v in hi[0].items():
        d = v - lo[0].get(addr, 0)
        if d and frames(addr):
            own += d
            by_frame[outermost(addr)] += d
            if a.detail and re.search(a.detail, outermost(addr)):
                detail[where(addr)] += d
    for (addr, callee), v in hi[1].items():
        d = v - lo[1].get((addr, callee), 0)
        if d and frames(addr) and not ours.search(callee):
            out += d
            by_frame[outermost(addr)] += d
            by_callee[callee] += d
            if a.detail and re.search(a.detail, outermost(addr)):
                detail[f'{where(addr)} -> {callee[:70]}'] += d
    print(f'{a.crates}: {(own + out) / n:.0f} instructions per round trip '
          f'({own / n:.0f} their own, {out / n:.0f} in what they call)')
    print('by outermost function of those crates:')
    for k, v in by_frame.most_common(30):
        print(f'  {v / n:7.0f}  {k}')
    print('calls out of their code, by callee:')
    for k, v in by_callee.most_common(15):
        print(f'  {v / n:7.0f}  {k}')
    if a.detail:
        print(f'source lines under {a.detail}:')
        for k, v in detail.most_common(60):
            print(f'  {v / n:7.0f}  {k}')


if __name__ == '__main__':
    main()
