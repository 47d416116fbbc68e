import csv, sys, re, collections
def load(p):
    rows = list(csv.reader(open(p)))
    hdr = rows[1]
    i_src, i_exec, i_samp = hdr.index("Source"), hdr.index("Instructions Executed"), hdr.index("Warp Stall Sampling (All Samples)")
    out = []
    for r in rows[2:]:
        if len(r) <= i_exec: continue
        try: out.append((r[i_src].strip(), int(r[i_exec] or 0), int(r[i_samp] or 0)))
        except ValueError: pass
    return out
for p in sys.argv[1:]:
    d = load(p)
    tot = sum(x[1] for x in d); samp = sum(x[2] for x in d)
    by = collections.Counter(); bys = collections.Counter()
    for s, e, sm in d:
        op = s.split()[0] if not s.startswith("@") else s.split()[1]
        op = op.split(".")[0]
        by[op] += e; bys[op] += sm
    print(p, "executed", tot, "samples", samp)
    for op, e in by.most_common(22): print(f"   {op:12s} {e:12d} {bys[op]:8d}")
