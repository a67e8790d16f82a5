#!/usr/bin/env python3
"""Retarget the Megatron GPT captures of ../shared/corpus to another TP size.

The TP 2 and TP 4 captures of the same model differ only in numbers: each
numeric token of a rank's graph is, at every position, either the same at
both sizes, the group size itself, or c / tp (+ rank * d / tp for the
rank-dependent offsets of vocab shards and the like). This script aligns the
token streams of TP 2 and TP 4 (rank 0 and 1 of each, plus ranks 2 and 3 of
TP 4 for the rank term), fits each numeric position to one of those forms,
and writes the graphs at TP size T with the same structure. A position
that fits no form stops the script (it never guesses).

  retarget_tp.py CORPUS_DIR T OUT_DIR     (writes OUT_DIR/seq, OUT_DIR/dist)

T must divide the model's heads (24), hidden (768), vocab (98304),
sequence (1536) and the other split sizes; the script checks every value it
computes is an integer >= 1 (or >= 0 for offsets).
"""
import os
import re
import sys
from fractions import Fraction

TOKEN = re.compile(r"(\d+(?:\.\d+)?(?:e[-+]?\d+)?)")


def tokens(text):
    parts = TOKEN.split(text)
    return parts[0::2], parts[1::2]  # text between numbers, numbers


def load(path):
    with open(path) as f:
        return f.read()


def fit(pos, v2, v4, quoted=False):
    """v2[r], v4[r]: the value at TP 2 (ranks 0, 1) and TP 4 (ranks 0..3).
    Returns a function (tp, rank) -> str."""
    if all(v == v2[0] for v in v2 + v4):
        return lambda tp, r, s=v2[0]: s
    if quoted and all(v == v2[0] for v in v2) and all(v == v4[0] for v in v4):
        # An opaque id in quotes (a process group id such as '22'): the TP 4
        # capture's for every size but 2.
        return lambda tp, r, a=v2[0], b=v4[0]: a if tp == 2 else b
    if any(not re.fullmatch(r"\d+", v) for v in v2 + v4):
        raise SystemExit(f"position {pos}: non-integer value varies with TP: {v2} {v4}")
    a2 = [int(v) for v in v2]
    a4 = [int(v) for v in v4]
    # The group size (or something proportional to it): v = c * tp.
    if all(x == a2[0] for x in a2) and all(x == a4[0] for x in a4) and a4[0] == 2 * a2[0]:
        c = Fraction(a2[0], 2)
        return lambda tp, r, c=c: str(int(c * tp))
    # The rank itself (device index).
    if a2 == [0, 1] and a4 == [0, 1, 2, 3]:
        return lambda tp, r: str(r)
    # v = (c + rank * d) / tp, an affine rank term over the TP size.
    c = Fraction(a2[0] * 2)
    d = Fraction(a2[1] * 2) - c
    ok = all(Fraction(a4[r] * 4) == c + r * d for r in range(4))
    if ok:
        def f(tp, r, c=c, d=d):
            v = (c + r * d) / tp
            if v.denominator != 1 or v < 0:
                raise SystemExit(f"position {pos}: {c} + {r}*{d} over tp {tp} is not a whole number")
            return str(int(v))
        return f
    # v = c + rank * d / tp with c fixed (an end offset counted from a start).
    raise SystemExit(f"position {pos}: values {a2} at TP 2 and {a4} at TP 4 fit no form")


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    corpus, tp, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    d2 = os.path.join(corpus, "megatron_gpt_tp2_l1", "dist")
    d4 = os.path.join(corpus, "megatron_gpt_tp4_l1", "dist")
    texts2 = [load(os.path.join(d2, f"fw.g0.r{r}.py")) for r in range(2)]
    texts4 = [load(os.path.join(d4, f"fw.g0.r{r}.py")) for r in range(4)]
    split2 = [tokens(t) for t in texts2]
    split4 = [tokens(t) for t in texts4]
    frame = split2[0][0]
    for s in split2 + split4:
        if s[0] != frame:
            raise SystemExit("the captures differ in more than numbers")
    n = len(split2[0][1])
    fits = [fit(i, [s[1][i] for s in split2], [s[1][i] for s in split4],
                frame[i].endswith("'") and frame[i + 1].startswith("'")) for i in range(n)]
    os.makedirs(os.path.join(out, "dist"), exist_ok=True)
    os.makedirs(os.path.join(out, "seq"), exist_ok=True)
    for r in range(tp):
        nums = [f(tp, r) for f in fits]
        text = "".join(frame[i] + (nums[i] if i < n else "") for i in range(len(frame)))
        with open(os.path.join(out, "dist", f"fw.g0.r{r}.py"), "w") as f:
            f.write(text)
    seq = load(os.path.join(corpus, "megatron_gpt_tp2_l1", "seq", "fw.g0.r0.py"))
    with open(os.path.join(out, "seq", "fw.g0.r0.py"), "w") as f:
        f.write(seq)


if __name__ == "__main__":
    main()
