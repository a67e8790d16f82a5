"""Capture a model per rank for shardproof (docs/fx-import.md, "Capture helper").

Stdlib + torch only. Each rank of a torch.distributed job calls
`capture_rank(fn, inputs, out_dir, name)`; the graph of `fn` on that rank is
written as `out_dir/<name>.r<rank>.py` in the text torch.fx prints for an
ATen-level GraphModule, and `write_mesh` writes a mesh file mapping every
process group id in the graphs to its ranks, read from torch.distributed.

Collectives must be called through this module (`all_reduce`,
`all_gather_into_tensor`, `reduce_scatter_tensor`, `broadcast`), which runs
them for real and makes them visible to the tracer:

- torch 2.x: they are torch.distributed._functional_collectives, and graphs
  are captured with TorchDynamo + AOTAutograd (`tracer="dynamo"`, the
  default) or `make_fx` (`tracer="make_fx"`).
- torch 1.13 (Debian's python3-torch): torch.distributed collectives are not
  ATen ops and make_fx does not see them. This module registers custom ops
  `shardproof_c10d::<name>` (torch.library) whose CPU kernel runs the real
  collective on the group, traces with `make_fx`, and writes them in the
  spelling torch 2.x prints: `torch.ops._c10d_functional.all_reduce.default(x,
  'sum', '<group id>')` followed by `wait_tensor`.
"""

import math
import os
import re
import sys
import traceback

import torch
import torch.distributed as dist

_MAJOR = int(torch.__version__.split(".")[0])
TORCH2 = _MAJOR >= 2

_DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
    torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
    torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8", torch.bool: "b8",
}

_CUSTOM_NS = "shardproof_c10d"
_PRINTED_NS = "_c10d_functional"


class CaptureError(Exception):
    """A model or graph the helper cannot capture in a form shardproof reads."""


# --- process groups ---------------------------------------------------------

def _pg_names():
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_world") and hasattr(c10d._world, "pg_names"):
        return dict(c10d._world.pg_names)
    return dict(c10d._pg_names)


def group_id(group=None):
    """The c10d name of `group` (WORLD when None), as captures print it."""
    pg = group if group is not None else dist.group.WORLD
    if TORCH2 and hasattr(pg, "group_name"):
        return pg.group_name
    names = _pg_names()
    if pg not in names:
        raise CaptureError("process group %r has no c10d name on rank %d (is this rank a member?)"
                           % (pg, dist.get_rank()))
    return names[pg]


def _group_by_id(gid):
    for pg, name in _pg_names().items():
        if name == gid:
            return pg
    raise CaptureError("no process group named '%s' on rank %d" % (gid, dist.get_rank()))


def group_ranks(gid):
    """Global ranks of the group named `gid`, read from torch.distributed."""
    return sorted(dist.get_process_group_ranks(_group_by_id(gid)))


# --- collectives ------------------------------------------------------------

_REDUCE_OPS = {"sum": "SUM", "max": "MAX", "min": "MIN"}
_lib = None


def _register_custom_ops():
    """torch 1.13: collectives as traceable custom ops running gloo for real."""
    global _lib
    if _lib is not None:
        return
    lib = torch.library.Library(_CUSTOM_NS, "DEF")
    lib.define("all_reduce(Tensor x, str reduce_op, str group_name) -> Tensor")
    lib.define("all_gather_into_tensor(Tensor x, int group_size, str group_name) -> Tensor")
    lib.define("reduce_scatter_tensor(Tensor x, str reduce_op, int group_size, str group_name) -> Tensor")
    lib.define("broadcast(Tensor x, int src, str group_name) -> Tensor")
    lib.define("wait_tensor(Tensor x) -> Tensor")

    def reduce_(y, op, pg):
        if op == "avg":
            dist.all_reduce(y, op=dist.ReduceOp.SUM, group=pg)
            y.div_(dist.get_world_size(pg))
        elif op in _REDUCE_OPS:
            dist.all_reduce(y, op=getattr(dist.ReduceOp, _REDUCE_OPS[op]), group=pg)
        else:
            raise CaptureError("all_reduce: unsupported reduce op '%s' (sum, avg, max, min)" % op)
        return y

    def all_reduce(x, op, gid):
        return reduce_(x.clone(), op, _group_by_id(gid))

    def all_gather(x, group_size, gid):
        pg = _group_by_id(gid)
        if dist.get_world_size(pg) != group_size:
            raise CaptureError("all_gather_into_tensor: group_size %d but group '%s' has %d ranks"
                               % (group_size, gid, dist.get_world_size(pg)))
        parts = [torch.empty_like(x) for _ in range(group_size)]
        dist.all_gather(parts, x.contiguous(), group=pg)
        return torch.cat(parts, 0)

    def reduce_scatter(x, op, group_size, gid):
        pg = _group_by_id(gid)
        if x.shape[0] % group_size != 0:
            raise CaptureError("reduce_scatter_tensor: dim 0 extent %d not divisible by group size %d"
                               % (x.shape[0], group_size))
        # gloo has no reduce_scatter: all_reduce, then this rank's chunk.
        y = reduce_(x.clone(), op, pg)
        return y.chunk(group_size, 0)[dist.get_rank(pg)].clone()

    def broadcast(x, src, gid):
        y = x.clone()
        dist.broadcast(y, src, group=_group_by_id(gid))
        return y

    lib.impl("all_reduce", all_reduce, "CPU")
    lib.impl("all_gather_into_tensor", all_gather, "CPU")
    lib.impl("reduce_scatter_tensor", reduce_scatter, "CPU")
    lib.impl("broadcast", broadcast, "CPU")
    lib.impl("wait_tensor", lambda x: x.clone(), "CPU")
    _lib = lib


def _op(name):
    _register_custom_ops()
    return getattr(getattr(torch.ops, _CUSTOM_NS), name)


def all_reduce(x, group=None, op="sum"):
    """Sum (avg, max, min) of `x` over `group` (WORLD when None)."""
    if TORCH2:
        import torch.distributed._functional_collectives as funcol
        return funcol.all_reduce(x, op, group if group is not None else dist.group.WORLD)
    return _op("wait_tensor")(_op("all_reduce")(x, op, group_id(group)))


def all_gather_into_tensor(x, group=None):
    """Concatenation along dim 0 of every rank's `x`, in group rank order."""
    pg = group if group is not None else dist.group.WORLD
    if TORCH2:
        import torch.distributed._functional_collectives as funcol
        return funcol.all_gather_tensor(x, 0, pg)
    return _op("wait_tensor")(_op("all_gather_into_tensor")(x, dist.get_world_size(pg), group_id(pg)))


def reduce_scatter_tensor(x, group=None, op="sum"):
    """This rank's dim-0 chunk of the reduction of `x` over `group`."""
    pg = group if group is not None else dist.group.WORLD
    if TORCH2:
        import torch.distributed._functional_collectives as funcol
        return funcol.reduce_scatter_tensor(x, op, 0, pg)
    return _op("wait_tensor")(_op("reduce_scatter_tensor")(x, op, dist.get_world_size(pg), group_id(pg)))


def broadcast(x, src, group=None):
    """`x` of global rank `src` on every rank of `group`."""
    pg = group if group is not None else dist.group.WORLD
    if TORCH2:
        import torch.distributed._functional_collectives as funcol
        return funcol.broadcast(x, src, pg)
    return _op("wait_tensor")(_op("broadcast")(x, src, group_id(pg)))


# --- graph text ---------------------------------------------------------------

def _type(meta, where):
    if meta is None or not hasattr(meta, "dtype") or not hasattr(meta, "shape"):
        raise CaptureError("%s: no tensor metadata (symbolic or non-tensor value)" % where)
    if meta.dtype not in _DTYPES:
        raise CaptureError("%s: dtype %s has no shardproof type" % (where, meta.dtype))
    dims = []
    for d in meta.shape:
        if not isinstance(d, int):
            raise CaptureError("%s: symbolic size %s (capture with concrete shapes)" % (where, d))
        dims.append(str(d))
    return '"%s[%s]"' % (_DTYPES[meta.dtype], ", ".join(dims))


def _meta(node):
    v = node.meta.get("val", node.meta.get("tensor_meta"))
    return v


def _arg(a):
    import torch.fx as fx
    if isinstance(a, fx.Node):
        return a.name
    if isinstance(a, (list, tuple)):
        body = ", ".join(_arg(x) for x in a)
        if isinstance(a, tuple):
            return "(" + body + ("," if len(a) == 1 else "") + ")"
        return "[" + body + "]"
    if isinstance(a, bool) or a is None:
        return repr(a)
    if isinstance(a, float):
        if math.isinf(a):
            return "inf" if a > 0 else "-inf"
        if math.isnan(a):
            return "nan"
        return repr(a)
    if isinstance(a, (int, str)):
        return repr(a)
    if isinstance(a, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(a) if not isinstance(a, torch.device) else repr(a)
    raise CaptureError("argument %r of type %s cannot be written" % (a, type(a).__name__))


def _target(node):
    import operator
    t = node.target
    if t is operator.getitem:
        return None
    if not isinstance(t, torch._ops.OpOverload):
        raise CaptureError("node '%s': %s is not an ATen/torch.ops overload" % (node.name, t))
    name = str(t)  # "aten.mm.default"
    if name.startswith(_CUSTOM_NS + "."):
        name = _PRINTED_NS + name[len(_CUSTOM_NS):]
    return "torch.ops." + name


def graph_text(gm, header=""):
    """The torch 2.x print_readable form of an ATen GraphModule."""
    params, body, ret, last_frame = [], [], None, None
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            params.append("%s: %s" % (n.name, _type(_meta(n), "input '%s'" % n.name)))
        elif n.op == "get_attr":
            body.append("%s = self.%s" % (n.name, n.target))
        elif n.op == "call_function":
            frame = n.meta.get("sp_frame")
            if frame != last_frame:
                if frame is None:
                    body.append("")
                    body.append("# No stacktrace found for following nodes")
                else:
                    body.append("")
                    body.append("# File: %s:%d in %s, code: %s" % frame)
                last_frame = frame
            target = _target(n)
            if target is None:  # getitem of a tuple result
                body.append("%s: %s = %s[%d]" % (n.name, _type(_meta(n), "node '%s'" % n.name),
                                                 n.args[0].name, n.args[1]))
                continue
            args = [_arg(a) for a in n.args] + ["%s = %s" % (k, _arg(v)) for k, v in n.kwargs.items()]
            m = _meta(n)
            # A tuple result (split_with_sizes): make_fx on torch 1.13 leaves
            # no metadata on it, only on the getitems that read it.
            tuple_result = isinstance(m, (list, tuple)) and not hasattr(m, "dtype")
            if m is None and n.users and all(_target(u) is None for u in n.users):
                tuple_result = True
            if tuple_result:
                body.append("%s = %s(%s)" % (n.name, target, ", ".join(args)))
            else:
                body.append("%s: %s = %s(%s)" % (n.name, _type(m, "node '%s'" % n.name), target,
                                                 ", ".join(args)))
        elif n.op == "output":
            outs = n.args[0]
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            ret = "return (%s,)" % ", ".join(_arg(o) for o in outs) if len(outs) == 1 else \
                "return [%s]" % ", ".join(_arg(o) for o in outs)
        else:
            raise CaptureError("node '%s': %s nodes are not supported (call_module?)" % (n.name, n.op))
    lines = ([header] if header else []) + ["import torch", "", "class GraphModule(torch.nn.Module):",
             "    def forward(self, %s):" % ", ".join(params)]
    lines += [("        " + b) if b else "" for b in body] + ["        " + ret, ""]
    return "\n".join(lines)


def _rename_placeholders(gm, names):
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(phs) != len(names):
        raise CaptureError("graph has %d inputs, %d names given" % (len(phs), len(names)))
    taken = {n.name for n in gm.graph.nodes}
    for n, want in zip(phs, names):
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", want):
            raise CaptureError("input name '%s' is not an identifier" % want)
        if want != n.name and want in taken:
            raise CaptureError("input name '%s' collides with a node of the graph" % want)
        taken.discard(n.name)
        n.name = want
        taken.add(want)


# --- capture ------------------------------------------------------------------

def _trace_make_fx(fn, names, args):
    from torch.fx.experimental.proxy_tensor import make_fx
    aten = torch.ops.aten
    decomp = {}
    if hasattr(aten, "_reshape_alias"):  # torch 1.13: reshape decomposes to this
        decomp[aten._reshape_alias.default] = lambda x, size, stride: aten.view.default(x, size)

    def positional(*a):
        return fn(**dict(zip(names, a)))

    # make_fx on 1.13 records no usable stack: note the innermost frame of
    # user code (outside torch and this file) on every node it creates.
    import torch.fx.experimental.proxy_tensor as pt
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    here = os.path.abspath(__file__)
    orig = pt.PythonKeyTracer.create_proxy

    def create_proxy(self, *a, **kw):
        proxy = orig(self, *a, **kw)
        for fr in reversed(traceback.extract_stack()):
            f = os.path.abspath(fr.filename)
            if not f.startswith(torch_dir) and f != here and not f.startswith("<"):
                rel = os.path.relpath(f)  # paths under the working directory are written relative
                name = rel if not rel.startswith("..") else f
                proxy.node.meta["sp_frame"] = (name, fr.lineno, fr.name, (fr.line or "").strip())
                break
        return proxy

    pt.PythonKeyTracer.create_proxy = create_proxy
    try:
        with torch.no_grad():
            gm = make_fx(positional, decomposition_table=decomp)(*args)
    finally:
        pt.PythonKeyTracer.create_proxy = orig
    _rename_placeholders(gm, names)
    return graph_text(gm)


def _aot_compiled(fn, names, kinds):
    """`fn` compiled by TorchDynamo + AOTAutograd with a compiler per graph
    kind ("fw", "bw") that keeps the graph; returns (compiled, {kind: [graphs]})."""
    from torch._dynamo.backends.common import aot_autograd
    from functorch.compile import make_boxed_func
    graphs = {k: [] for k in kinds}

    def keep(kind):
        def compiler(gm, example_inputs):
            graphs[kind].append(gm)
            return make_boxed_func(gm.forward)
        return compiler

    torch._dynamo.reset()
    compilers = {"%s_compiler" % k: keep(k) for k in kinds}
    compiled = torch.compile(lambda *a: fn(**dict(zip(names, a))), backend=aot_autograd(**compilers),
                             fullgraph=True)
    return compiled, graphs


def _trace_dynamo(fn, names, args):
    """torch 2.x: TorchDynamo + AOTAutograd; the forward graph as torch prints it."""
    compiled, graphs = _aot_compiled(fn, names, ["fw"])
    with torch.no_grad():
        compiled(*args)
    if len(graphs["fw"]) != 1:
        raise CaptureError("Dynamo produced %d graphs (graph break?); expected one" % len(graphs["fw"]))
    return graphs["fw"][0].print_readable(print_output=False)


def _trace_dynamo_joint(fn, names, args, grad):
    """torch 2.x: the forward and backward graphs AOTAutograd partitions a
    training step into, as torch prints them (TORCH_LOGS=aot_graphs)."""
    compiled, graphs = _aot_compiled(fn, names, ["fw", "bw"])
    leaves = [a.detach().clone().requires_grad_(n in grad) for n, a in zip(names, args)]
    out = compiled(*leaves)
    # A fixed tangent (not ones: a sum's gradient hides layout bugs).
    g = torch.Generator().manual_seed(7)
    out.backward(torch.randn(out.shape, generator=g, dtype=out.dtype))
    if len(graphs["fw"]) != 1 or len(graphs["bw"]) != 1:
        raise CaptureError("AOTAutograd produced %d forward and %d backward graphs; expected one each"
                           % (len(graphs["fw"]), len(graphs["bw"])))
    return tuple(graphs[k][0].print_readable(print_output=False) for k in ("fw", "bw"))


def capture_joint(fn, inputs, grad):
    """(forward text, backward text) of a training step of `fn(**inputs)`, the
    gradients taken for the inputs named in `grad` (torch 2.x only)."""
    names = list(inputs.keys())
    if not TORCH2:
        raise CaptureError("forward+backward capture needs torch 2.x AOTAutograd (this is %s)"
                           % torch.__version__)
    unknown = [n for n in grad if n not in inputs]
    if unknown:
        raise CaptureError("gradient requested for unknown inputs: %s" % ", ".join(unknown))
    return _trace_dynamo_joint(fn, names, [inputs[k] for k in names], set(grad))


def capture(fn, inputs, tracer=None):
    """Graph text of `fn(**inputs)`; `inputs` is an ordered dict name -> tensor."""
    names = list(inputs.keys())
    args = [inputs[k] for k in names]
    for k, v in inputs.items():
        if not isinstance(v, torch.Tensor):
            raise CaptureError("input '%s' is not a tensor" % k)
    tracer = tracer or ("dynamo" if TORCH2 else "make_fx")
    if tracer == "dynamo":
        if not TORCH2:
            raise CaptureError("tracer 'dynamo' needs torch 2.x (this is %s)" % torch.__version__)
        return _trace_dynamo(fn, names, args)
    if tracer == "make_fx":
        return _trace_make_fx(fn, names, args)
    raise CaptureError("unknown tracer '%s' (dynamo, make_fx)" % tracer)


_GROUP_CALL = re.compile(r"torch\.ops\._?c10d_functional\.(\w+)\.default\((.*)\)\s*$")


def group_ids(text):
    """Group ids named by the collectives of a graph text (the last string argument)."""
    ids = []
    for line in text.splitlines():
        m = _GROUP_CALL.search(line.split(";")[0])  # torch 2.x appends ';  x = None'
        if not m or m.group(1) == "wait_tensor":
            continue
        strs = re.findall(r"'([^']*)'", m.group(2))
        if not strs:
            raise CaptureError("collective without a group name: %s" % line.strip())
        if strs[-1] not in ids:
            ids.append(strs[-1])
    return ids


def _write(text, path, header):
    if header:
        text = "".join("# " + h + "\n" for h in header.splitlines()) + text
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _texts(fn, inputs, tracer, grad):
    """{"": text} for a forward capture, {"fw": ..., "bw": ...} for a training step."""
    if grad is None:
        return {"": capture(fn, inputs, tracer)}
    fw, bw = capture_joint(fn, inputs, grad)
    return {"fw": fw, "bw": bw}


def capture_rank(fn, inputs, out_dir, name, tracer=None, header="", grad=None):
    """Captures this rank's `fn` into out_dir/<name>.r<rank>.py; returns
    {group id: ranks} for the groups its collectives name. With `grad` (input
    names), a training step: the forward graph goes to out_dir/fw/, the
    backward to out_dir/bw/."""
    rank = dist.get_rank()
    groups = {}
    for kind, text in _texts(fn, inputs, tracer, grad).items():
        _write(text, os.path.join(out_dir, kind, "%s.r%d.py" % (name, rank)), header)
        groups.update({gid: group_ranks(gid) for gid in group_ids(text)})
    return groups


def capture_seq(fn, inputs, path, tracer=None, header="", grad=None):
    """Captures the sequential model (one process, no collectives) into `path`
    (with `grad`: path.fw.py and path.bw.py, `path` without its .py)."""
    for kind, text in _texts(fn, inputs, tracer, grad).items():
        if group_ids(text):
            raise CaptureError("the sequential model calls collectives (%s)" % ", ".join(group_ids(text)))
        _write(text, path if not kind else re.sub(r"\.py$", "", path) + "." + kind + ".py", header)


def _axis_groups(axes, combo, world):
    """Rank lists of the mesh groups spanning the axes `combo` (row-major mesh)."""
    sizes = [s for _, s in axes]
    strides = [int(math.prod(sizes[i + 1:])) for i in range(len(sizes))]
    groups = set()
    for r in range(world):
        coord = [(r // strides[i]) % sizes[i] for i in range(len(sizes))]
        members = []
        for q in range(world):
            qc = [(q // strides[i]) % sizes[i] for i in range(len(sizes))]
            if all(qc[i] == coord[i] for i in range(len(sizes)) if i not in combo):
                members.append(q)
        groups.add(tuple(members))
    return groups


def mesh_text(groups, world, axes=None):
    """Mesh file text: `mesh` line for `axes` [(name, size)], one `group` line per id."""
    lines = ["# written by tools/capture/shardproof_capture.py from torch.distributed"]
    if axes:
        if math.prod(s for _, s in axes) != world:
            raise CaptureError("mesh %s has %d ranks, the world %d"
                               % (" ".join("%s=%d" % a for a in axes), math.prod(s for _, s in axes), world))
        lines.append("mesh " + " ".join("%s=%d" % a for a in axes))
    import itertools
    combos = []
    if axes:
        for k in range(1, len(axes) + 1):
            for c in itertools.combinations(range(len(axes)), k):
                combos.append((c, _axis_groups(axes, c, world)))
    for gid in sorted(groups, key=lambda g: (len(g), g)):
        ranks = tuple(sorted(groups[gid]))
        spec = None
        if len(ranks) == 1:
            spec = "self"
        else:
            for c, gs in combos:
                if ranks in gs:
                    spec = "+".join(axes[i][0] for i in c)
                    break
        if spec is None and ranks == tuple(range(world)):
            spec = "world"
        if spec is None:
            # This group plus every other rank alone: only members call it.
            parts = [list(ranks)] + [[r] for r in range(world) if r not in ranks]
            spec = " ".join("[" + ", ".join(str(r) for r in p) + "]" for p in parts)
        lines.append("group %s = %s" % (gid, spec))
    return "\n".join(lines) + "\n"


def write_mesh(path, rank_groups, axes=None):
    """Gathers every rank's {group id: ranks} (from capture_rank) and writes the
    mesh file on rank 0. Collective: every rank calls it."""
    world = dist.get_world_size()
    gathered = [None] * world
    dist.all_gather_object(gathered, rank_groups)
    merged = {}
    for r, g in enumerate(gathered):
        for gid, ranks in g.items():
            if gid in merged and merged[gid] != ranks:
                raise CaptureError("group '%s' has ranks %s on one rank and %s on rank %d"
                                   % (gid, merged[gid], ranks, r))
            merged[gid] = ranks
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write(mesh_text(merged, world, axes))
    dist.barrier()
    return merged


# --- launching ---------------------------------------------------------------

def _worker(rank, world, init_file, main, args):
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=world)
    try:
        main(rank, world, *args)
    except CaptureError as e:
        sys.stderr.write("error: rank %d: %s\n" % (rank, e))
        sys.exit(3)
    finally:
        dist.destroy_process_group()


def launch(world, main, *args):
    """Runs main(rank, world, *args) in `world` CPU processes with a gloo group
    (file:// rendezvous in a temporary directory)."""
    import tempfile
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory(prefix="sp-capture-") as d:
        try:
            mp.spawn(_worker, args=(world, os.path.join(d, "rendezvous"), main, args), nprocs=world, join=True)
        except mp.ProcessExitedException as e:  # the rank printed its error
            raise SystemExit(e.exit_code if e.exit_code and e.exit_code > 0 else 3)
