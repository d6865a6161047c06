#!/usr/bin/env python3
"""The anchors of issue 23: the nets of `examples/nn_throughput.rs` built in ONNX Runtime and
PyTorch, timed on one thread (docs/network.md, "Measuring against ONNX Runtime and PyTorch").
`benches/anchors/run.sh` installs the packages, alternates rounds with tabula's example, and
calls `report` to print the table; CI does not run it.

    anchors.py measure --net NAME --engine ort|torch [--rounds N] [--seconds S]
    anchors.py check                       # ORT and PyTorch give the same outputs
    anchors.py count                       # trainable parameters per net (numpy only)
    anchors.py report RESULTS.jsonl [--json] [--machine MACHINE.json]

Each net is written once, as a forward function over an "ops" object (`forward`): `OnnxOps`
turns it into an ONNX graph (opset 13, built with `onnx.helper`, so ONNX Runtime runs without
PyTorch), `TorchOps` runs it eagerly. Both read the same weights, drawn here with numpy.

tabula's nets (crates/tabula-nn/src/lib.rs, docs/network.md "The network"):
  - MLP: dense layers with ReLU over the flattened planes (channel-major);
  - ResNet BxC: 3x3 conv (pad 1, bias) to C channels, ReLU, then B blocks of two 3x3 convs
    (ReLU after the first; the block's input added after the second, then ReLU);
  - heads from the flattened trunk (channel-major): policy dense to |A| logits, value dense to
    1, tanh.
Liu et al.'s Chinese Checkers net, as counted layer by layer from the authors' released model
(tabula's `ResNet::liu()`, docs/network.md "Architectures"):
  - input 7 x 7 x 7 (six ID planes of three states, one side plane), 294 actions;
  - stem: 3x3 conv to 64 channels with no padding (the 7 x 7 planes become 5 x 5), batch
    norm, ReLU: 4,224 trainable values;
  - 9 bottleneck blocks on the 5 x 5 trunk: 1x1 conv to 32, BN, ReLU; 3x3 conv to 32 (pad 1),
    BN, ReLU; 1x1 conv to 64, BN; add the block's input; ReLU (He et al. 2016): 13,696 each;
  - every conv keeps its bias although batch norm follows (PyTorch's Conv2d default);
  - policy head: 1x1 conv to 16, BN, ReLU, flattened (400), dense to 294: 118,966;
  - value head: 1x1 conv to 1, BN, ReLU, flattened (25), dense to 32, ReLU, dense to 1, tanh:
    932.
  That is the paper's 247,386 trainable parameters (batch norm's scale and shift counted, its
  running statistics not). An earlier reading here (padded stem, no conv biases, AlphaGo
  Zero's heads of 2 channels and 256 hidden units) counted 168,633.
Training (both engines): loss per example = cross-entropy of the softmax over the legal actions
against the target distribution + (tanh(v) - z)^2 with z in [-1, 1], mean over the batch;
SGD, learning rate 0.1, momentum 0.9, Nesterov, weight decay 1e-4 (tabula's
`NetworkSettings::default`); batch norm in training mode (batch statistics).
"""

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time

import numpy as np

# (name, label, planes (C, H, W), actions, kind, shape)
NETS = [
    ("c4-mlp64x64", "Connect Four MLP [64, 64]", (2, 6, 7), 7, "mlp", [64, 64]),
    ("c4-res2x16", "Connect Four ResNet 2x16", (2, 6, 7), 7, "res", (2, 16)),
    ("c4-res6x64", "Connect Four ResNet 6x64", (2, 6, 7), 7, "res", (6, 64)),
    ("cc7-res9x32", "7x7 ResNet 9x32 (checkers:7x7-6)", (3, 7, 7), 294, "res", (9, 32)),
    ("cc7-res9x64", "7x7 ResNet 9x64 (checkers:7x7-6)", (3, 7, 7), 294, "res", (9, 64)),
    ("liu", "Liu et al.'s net (9 bottleneck blocks + BN)", (7, 7, 7), 294, "liu", None),
]
NET_NAMES = [n[0] for n in NETS]

LIU_STEM, LIU_MID, LIU_BLOCKS = 64, 32, 9
# The heads' 1x1 channels and the value head's hidden width.
LIU_POLICY, LIU_VALUE, LIU_HIDDEN = 16, 1, 32
# The trainable parameters of Liu et al.'s net (the paper's count).
LIU_TRAINABLE = 247_386


def net_spec(name):
    for n in NETS:
        if n[0] == name:
            return n
    sys.exit(f"unknown net `{name}`; the nets are: {', '.join(NET_NAMES)}")


# --- weights --------------------------------------------------------------------------------


def make_params(spec, seed=1):
    """The weights, He-normal like tabula's `Layout::init` (the values do not change speed);
    dense weights are stored [out][in] (ONNX Gemm transB=1, torch's Linear)."""
    rng = np.random.default_rng(seed)
    _, _, (c, h, w), actions, kind, shape = spec
    p = {}

    def dense(name, n_in, n_out):
        p[name + ".w"] = rng.normal(0, math.sqrt(2 / n_in), (n_out, n_in)).astype(np.float32)
        p[name + ".b"] = np.zeros(n_out, np.float32)

    def conv(name, cin, cout, k, bias=True):
        p[name + ".w"] = rng.normal(0, math.sqrt(2 / (cin * k * k)), (cout, cin, k, k)).astype(
            np.float32
        )
        if bias:
            p[name + ".b"] = np.zeros(cout, np.float32)

    def bn(name, ch):
        p[name + ".gamma"] = np.ones(ch, np.float32)
        p[name + ".beta"] = np.zeros(ch, np.float32)
        # Running statistics: buffers, not trained.
        p[name + ".mean"] = np.zeros(ch, np.float32)
        p[name + ".var"] = np.ones(ch, np.float32)

    if kind == "mlp":
        n = c * h * w
        for i, width in enumerate(shape):
            dense(f"d{i}", n, width)
            n = width
        feat = n
    elif kind == "res":
        blocks, ch = shape
        conv("stem", c, ch, 3)
        for b in range(blocks):
            conv(f"b{b}.c0", ch, ch, 3)
            conv(f"b{b}.c1", ch, ch, 3)
        feat = ch * h * w
    else:
        # The unpadded stem: the trunk and heads run on (h - 2) x (w - 2).
        area = (h - 2) * (w - 2)
        conv("stem", c, LIU_STEM, 3)
        bn("stem.bn", LIU_STEM)
        for b in range(LIU_BLOCKS):
            for j, (cin, cout, k) in enumerate(
                [(LIU_STEM, LIU_MID, 1), (LIU_MID, LIU_MID, 3), (LIU_MID, LIU_STEM, 1)]
            ):
                conv(f"b{b}.c{j}", cin, cout, k)
                bn(f"b{b}.c{j}.bn", cout)
        conv("p.conv", LIU_STEM, LIU_POLICY, 1)
        bn("p.conv.bn", LIU_POLICY)
        dense("policy", LIU_POLICY * area, actions)
        conv("v.conv", LIU_STEM, LIU_VALUE, 1)
        bn("v.conv.bn", LIU_VALUE)
        dense("v.fc", LIU_VALUE * area, LIU_HIDDEN)
        dense("value", LIU_HIDDEN, 1)
        return p
    dense("policy", feat, actions)
    dense("value", feat, 1)
    return p


def trainable(name):
    return not (name.endswith(".mean") or name.endswith(".var"))


# --- the nets, written once -----------------------------------------------------------------


def forward(spec, ops, x):
    """(policy logits, value after tanh) of `x` through net `spec` with `ops`."""
    kind, shape = spec[4], spec[5]
    if kind == "mlp":
        t = ops.flatten(x)
        for i in range(len(shape)):
            t = ops.relu(ops.dense(t, f"d{i}"))
        feat = t
        return ops.dense(feat, "policy"), ops.tanh(ops.dense(feat, "value"))
    if kind == "res":
        blocks, _ = shape
        t = ops.relu(ops.conv(x, "stem", 3, bias=True))
        for b in range(blocks):
            u = ops.relu(ops.conv(t, f"b{b}.c0", 3, bias=True))
            u = ops.conv(u, f"b{b}.c1", 3, bias=True)
            t = ops.relu(ops.add(u, t))
        feat = ops.flatten(t)
        return ops.dense(feat, "policy"), ops.tanh(ops.dense(feat, "value"))
    # Liu et al.: an unpadded stem, every conv with its bias.
    t = ops.relu(ops.bn(ops.conv(x, "stem", 3, bias=True, pad=0), "stem.bn"))
    for b in range(LIU_BLOCKS):
        u = ops.relu(ops.bn(ops.conv(t, f"b{b}.c0", 1, bias=True), f"b{b}.c0.bn"))
        u = ops.relu(ops.bn(ops.conv(u, f"b{b}.c1", 3, bias=True), f"b{b}.c1.bn"))
        u = ops.bn(ops.conv(u, f"b{b}.c2", 1, bias=True), f"b{b}.c2.bn")
        t = ops.relu(ops.add(u, t))
    pol = ops.relu(ops.bn(ops.conv(t, "p.conv", 1, bias=True), "p.conv.bn"))
    logits = ops.dense(ops.flatten(pol), "policy")
    val = ops.relu(ops.bn(ops.conv(t, "v.conv", 1, bias=True), "v.conv.bn"))
    val = ops.relu(ops.dense(ops.flatten(val), "v.fc"))
    return logits, ops.tanh(ops.dense(val, "value"))


class OnnxOps:
    """Builds an ONNX graph; values are tensor names."""

    def __init__(self, params):
        self.params = params
        self.nodes = []
        self.used = set()
        self.k = 0

    def _node(self, op, inputs, **attrs):
        import onnx.helper as oh

        self.k += 1
        out = f"t{self.k}"
        self.nodes.append(oh.make_node(op, inputs, [out], **attrs))
        return out

    def _p(self, name):
        self.used.add(name)
        return name

    def conv(self, x, name, k, bias, pad=None):
        """Zero padding `pad` (default k // 2: the planes keep their size)."""
        ins = [x, self._p(name + ".w")] + ([self._p(name + ".b")] if bias else [])
        pad = k // 2 if pad is None else pad
        return self._node("Conv", ins, kernel_shape=[k, k], pads=[pad] * 4, strides=[1, 1])

    def bn(self, x, name):
        ins = [x] + [self._p(f"{name}.{s}") for s in ("gamma", "beta", "mean", "var")]
        return self._node("BatchNormalization", ins, epsilon=1e-5)

    def relu(self, x):
        return self._node("Relu", [x])

    def add(self, a, b):
        return self._node("Add", [a, b])

    def flatten(self, x):
        return self._node("Flatten", [x], axis=1)

    def dense(self, x, name):
        return self._node("Gemm", [x, self._p(name + ".w"), self._p(name + ".b")], transB=1)

    def tanh(self, x):
        return self._node("Tanh", [x])


def onnx_model(spec, params):
    import onnx
    import onnx.helper as oh
    from onnx import TensorProto, numpy_helper

    c, h, w = spec[2]
    ops = OnnxOps(params)
    logits, value = forward(spec, ops, "planes")
    ops.nodes.append(oh.make_node("Identity", [logits], ["logits"]))
    ops.nodes.append(oh.make_node("Identity", [value], ["value"]))
    graph = oh.make_graph(
        ops.nodes,
        spec[0],
        [oh.make_tensor_value_info("planes", TensorProto.FLOAT, ["N", c, h, w])],
        [
            oh.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", spec[3]]),
            oh.make_tensor_value_info("value", TensorProto.FLOAT, ["N", 1]),
        ],
        [numpy_helper.from_array(params[n], n) for n in sorted(ops.used)],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


class TorchOps:
    """Runs the net eagerly in PyTorch; batch norm in training mode when `training`."""

    def __init__(self, params, training):
        import torch

        self.torch = torch
        self.F = torch.nn.functional
        self.training = training
        self.p = {
            n: torch.tensor(v, requires_grad=trainable(n)) for n, v in params.items()
        }

    def trainable(self):
        return [t for n, t in sorted(self.p.items()) if trainable(n)]

    def conv(self, x, name, k, bias, pad=None):
        pad = k // 2 if pad is None else pad
        return self.F.conv2d(
            x, self.p[name + ".w"], self.p[name + ".b"] if bias else None, padding=pad
        )

    def bn(self, x, name):
        p = self.p
        return self.F.batch_norm(
            x,
            p[name + ".mean"],
            p[name + ".var"],
            p[name + ".gamma"],
            p[name + ".beta"],
            training=self.training,
            momentum=0.1,
            eps=1e-5,
        )

    def relu(self, x):
        return self.F.relu(x)

    def add(self, a, b):
        return a + b

    def flatten(self, x):
        return self.torch.flatten(x, 1)

    def dense(self, x, name):
        return self.F.linear(x, self.p[name + ".w"], self.p[name + ".b"])

    def tanh(self, x):
        return self.torch.tanh(x)


# --- inputs ---------------------------------------------------------------------------------


def random_planes(rng, n, chw):
    """Planes of 0 and 1, each feature 1 with probability 1/4 (as tabula's example)."""
    return (rng.random((n,) + tuple(chw)) < 0.25).astype(np.float32)


def random_batch(rng, n, spec):
    """Planes, a legal mask, a target distribution over the legal actions, z in [-1, 1]."""
    actions = spec[3]
    x = random_planes(rng, n, spec[2])
    legal = np.zeros((n, actions), bool)
    target = np.zeros((n, actions), np.float32)
    for i in range(n):
        k = 1 + rng.integers(min(actions, 8))
        acts = rng.choice(actions, size=k, replace=False)
        wts = 1.0 + rng.integers(9, size=k)
        legal[i, acts] = True
        target[i, acts] = wts / wts.sum()
    z = rng.integers(3, size=n).astype(np.float32) / 2.0
    return x, legal, target, 2.0 * z - 1.0


def timed(seconds, work):
    """Calls `work` (which returns the items it processed) until `seconds` have passed, at
    least once; items per second."""
    t = time.perf_counter()
    done = 0
    while True:
        done += work()
        secs = time.perf_counter() - t
        if secs >= seconds:
            return done / secs


# --- engines --------------------------------------------------------------------------------


def ort_session(spec, params):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    model = onnx_model(spec, params)
    return ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )


def call_overhead_us(seconds):
    """Microseconds a `run` call of a one-node graph (Identity) takes at batch 1: the part of
    ONNX Runtime's batch-1 time that is Python's and the session's, not the net's."""
    import onnx.helper as oh
    import onnxruntime as ort
    from onnx import TensorProto

    io = [oh.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 1]) for n in ("x", "y")]
    graph = oh.make_graph([oh.make_node("Identity", ["x"], ["y"])], "null", io[:1], io[1:])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    x = np.zeros((1, 1), np.float32)

    def work():
        sess.run(None, {"x": x})
        return 1

    return 1e6 / timed(seconds, work)


def measure_ort(spec, rounds, seconds):
    import onnxruntime as ort

    overhead = call_overhead_us(min(seconds, 0.5))
    sess = ort_session(spec, make_params(spec))
    rng = np.random.default_rng(7)
    xs = random_planes(rng, 256, spec[2])
    sess.run(None, {"planes": xs[:64]})  # warm-up
    for r in range(rounds):
        rates = {}
        for batch in (1, 64):
            at = [0]

            def work():
                if at[0] + batch > len(xs):
                    at[0] = 0
                sess.run(None, {"planes": xs[at[0] : at[0] + batch]})
                at[0] += batch
                return batch

            rates[batch] = timed(seconds, work)
        emit(
            engine="onnxruntime",
            net=spec[0],
            round=r,
            supported=True,
            infer_b1=round(rates[1], 1),
            infer_b64=round(rates[64], 1),
            call_overhead_us=round(overhead, 2),
            version=ort.__version__,
        )


def torch_loss(torch, logits, value, legal, target, z):
    masked = logits.masked_fill(~legal, -1e30)
    logp = torch.log_softmax(masked, dim=1)
    policy = -(target * logp.masked_fill(~legal, 0.0)).sum(dim=1)
    v = value.squeeze(1)
    return (policy + (v - z) ** 2).mean()


def measure_torch(spec, rounds, seconds):
    import torch

    ops = TorchOps(make_params(spec), training=True)
    params = ops.trainable()
    n_params = sum(t.numel() for t in params)
    rng = np.random.default_rng(11)
    batches = []
    for _ in range(2):
        x, legal, target, z = random_batch(rng, 256, spec)
        batches.append(
            (torch.from_numpy(x), torch.from_numpy(legal), torch.from_numpy(target),
             torch.from_numpy(z))
        )
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
    k = [0]

    def step():
        x, legal, target, z = batches[k[0] % len(batches)]
        k[0] += 1
        opt.zero_grad(set_to_none=True)
        logits, value = forward(spec, ops, x)
        loss = torch_loss(torch, logits, value, legal, target, z)
        loss.backward()
        opt.step()
        return 256

    step()  # warm-up
    for r in range(rounds):
        rate = timed(seconds, step)
        emit(
            engine="pytorch",
            net=spec[0],
            round=r,
            supported=True,
            params=n_params,
            train_b256=round(rate, 2),
            version=torch.__version__,
        )


def check():
    """ONNX Runtime's outputs against PyTorch's (inference mode) on a few positions, for every
    net: the two builds of a net are the same net."""
    import torch

    worst = 0.0
    for spec in NETS:
        params = make_params(spec)
        sess = ort_session(spec, params)
        x = random_planes(np.random.default_rng(3), 8, spec[2])
        logits, value = sess.run(None, {"planes": x})
        with torch.no_grad():
            tl, tv = forward(spec, TorchOps(params, training=False), torch.from_numpy(x))
        err = max(
            float(np.abs(logits - tl.numpy()).max()), float(np.abs(value - tv.numpy()).max())
        )
        worst = max(worst, err)
        n = sum(v.size for k, v in params.items() if trainable(k))
        print(f"{spec[0]:<12} {n:>8} trainable parameters; ORT vs PyTorch max |diff| {err:.2e}")
    if worst > 1e-3:
        sys.exit(f"ORT and PyTorch disagree by {worst:.2e}")


def count():
    """Each net's trainable parameters (numpy only); Liu et al.'s must be the paper's."""
    for spec in NETS:
        params = make_params(spec)
        n = sum(v.size for k, v in params.items() if trainable(k))
        print(f"{spec[0]:<12} {n:>8} trainable parameters")
        if spec[4] == "liu" and n != LIU_TRAINABLE:
            sys.exit(f"Liu et al.'s net counts {n}, not the paper's {LIU_TRAINABLE}")


def emit(**fields):
    print(json.dumps(fields), flush=True)


# --- the table ------------------------------------------------------------------------------


def fmt_rate(x):
    if x is None:
        return "n/a"
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e4:
        return f"{x / 1e3:.1f}k"
    return f"{x:,.0f}"


def fmt_ratio(a, b):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}"


def report(path, as_json, machine_path):
    rows = [json.loads(line) for line in open(path) if line.strip().startswith("{")]
    machine = json.load(open(machine_path)) if machine_path else {}

    def median(engine, net, key):
        xs = [
            r[key]
            for r in rows
            if r.get("engine") == engine and r.get("net") == net and r.get("supported")
            and key in r
        ]
        return (statistics.median(xs), len(xs)) if xs else (None, 0)

    table = []
    for spec in NETS:
        net = spec[0]
        row = {"net": net, "label": spec[1]}
        for engine, key in [
            ("tabula", "infer_b1"),
            ("tabula", "infer_b64"),
            ("tabula", "train_b256"),
            ("onnxruntime", "infer_b1"),
            ("onnxruntime", "infer_b64"),
            ("pytorch", "train_b256"),
        ]:
            row[f"{engine}_{key}"], row[f"{engine}_{key}_rounds"] = median(engine, net, key)
        for key in ("infer_b1", "infer_b64"):
            a, b = row[f"tabula_{key}"], row[f"onnxruntime_{key}"]
            row[f"ratio_{key}"] = a / b if a is not None and b else None
        a, b = row["tabula_train_b256"], row["pytorch_train_b256"]
        row["ratio_train_b256"] = a / b if a is not None and b else None
        table.append(row)
    overhead = [r["call_overhead_us"] for r in rows if "call_overhead_us" in r]
    overhead = statistics.median(overhead) if overhead else None
    if as_json:
        out = {"machine": machine, "ort_call_overhead_us": overhead, "rows": table}
        print(json.dumps(out, indent=1))
        return
    print(
        "| net | tabula inference b1 / b64 | ONNX Runtime b1 / b64 | ratio b1 / b64 "
        "| tabula training b256 | PyTorch training b256 | ratio |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|")
    for r in table:
        if not any(v for k, v in r.items() if k.endswith("_rounds")):
            continue  # a net this run did not measure
        print(
            f"| {r['label']} "
            f"| {fmt_rate(r['tabula_infer_b1'])} / {fmt_rate(r['tabula_infer_b64'])} "
            f"| {fmt_rate(r['onnxruntime_infer_b1'])} / {fmt_rate(r['onnxruntime_infer_b64'])} "
            f"| {fmt_ratio(r['tabula_infer_b1'], r['onnxruntime_infer_b1'])} / "
            f"{fmt_ratio(r['tabula_infer_b64'], r['onnxruntime_infer_b64'])} "
            f"| {fmt_rate(r['tabula_train_b256'])} "
            f"| {fmt_rate(r['pytorch_train_b256'])} "
            f"| {fmt_ratio(r['tabula_train_b256'], r['pytorch_train_b256'])} |"
        )
    counts = [v for r in table for k, v in r.items() if k.endswith("_rounds") and v]
    rounds = f"{min(counts)}" if counts and min(counts) == max(counts) else (
        f"{min(counts)}-{max(counts)}" if counts else "0")
    print()
    print(
        f"Positions or samples per second, median of {rounds} round(s); ratio = tabula / "
        "anchor (above 1: tabula faster). One thread each, pinned to one core, rounds "
        "alternating tabula, ONNX Runtime, PyTorch."
    )
    if overhead is not None:
        print(
            f"ONNX Runtime's cost of one `run` call from Python on a one-node graph: "
            f"{overhead:.1f} us (median), included in its batch-1 rates."
        )
    for k, v in machine.items():
        print(f"- {k}: {v}")


def machine_info():
    """The machine and versions, as JSON (run.sh adds the load averages and the command)."""
    info = {}
    try:
        cpu = open("/proc/cpuinfo").read()
        model = [ln.split(":", 1)[1].strip() for ln in cpu.splitlines() if "model name" in ln]
        flags = next(
            (ln.split(":", 1)[1].split() for ln in cpu.splitlines() if ln.startswith("flags")),
            [],
        )
        info["cpu"] = f"{model[0] if model else '?'} ({len(model)} logical CPUs)"
        info["flags"] = " ".join(f for f in ("avx2", "fma", "avx512f") if f in flags) or "none"
    except OSError:
        info["cpu"] = platform.processor() or "?"
    info["python"] = platform.python_version()
    info["numpy"] = np.__version__
    for mod in ("onnxruntime", "onnx", "torch"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = "not installed"
    print(json.dumps(info))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="time one engine on one net; JSON lines")
    m.add_argument("--net", required=True)
    m.add_argument("--engine", required=True, choices=["ort", "torch"])
    m.add_argument("--rounds", type=int, default=1)
    m.add_argument("--seconds", type=float, default=1.0)
    sub.add_parser("check", help="ONNX Runtime and PyTorch agree on every net")
    sub.add_parser("count", help="trainable parameters per net (numpy only)")
    sub.add_parser("machine", help="the machine and versions, as JSON")
    r = sub.add_parser("report", help="the table of medians from JSON lines")
    r.add_argument("results")
    r.add_argument("--json", action="store_true")
    r.add_argument("--machine")
    args = ap.parse_args()
    if args.cmd == "measure":
        if args.rounds < 1 or not args.seconds > 0:
            sys.exit("--rounds must be at least 1 and --seconds positive")
        spec = net_spec(args.net)
        if args.engine == "torch":
            import torch

            torch.set_num_threads(1)
            torch.set_num_interop_threads(1)
            measure_torch(spec, args.rounds, args.seconds)
        else:
            measure_ort(spec, args.rounds, args.seconds)
    elif args.cmd == "check":
        import torch

        torch.set_num_threads(1)
        check()
    elif args.cmd == "count":
        count()
    elif args.cmd == "machine":
        machine_info()
    else:
        report(args.results, args.json, args.machine)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
