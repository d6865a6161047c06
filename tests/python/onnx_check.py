"""Checks tabula's network export against tabula's own outputs (tests/onnx_export.rs).

Usage: onnx_check.py CASES.json MODEL.onnx WEIGHTS.safetensors

CASES.json (written by the test from tabula's library): {"input": [C, H, W], "actions": A,
"positions": [{"planes": [C*H*W floats], "policy_logits": [A floats], "value": float}]}, the
value after tanh (in [-1, 1]).

Three independent readings of the export, each compared with tabula's outputs:
- ONNX Runtime runs the .onnx file (graph and weights), on the whole batch and on one position
  (the batch dimension is symbolic);
- NumPy reads the .safetensors file by hand (8-byte header length, JSON header, raw
  little-endian f32) and runs the forward pass written out here, in float64, on every
  architecture (MLPs; residual nets with basic or bottleneck blocks, batch normalisation's
  running statistics, convolution biases, dense or conv heads, a padded or unpadded stem as
  the metadata's `arch` says, the value's tanh or sigmoid as its `outputs` say);
- PyTorch, when importable, loads the .safetensors weights of a basic net (MLP, basic blocks,
  dense heads) into a torch.nn.Module by name (load_state_dict, strict) and runs it; else a
  loud SKIPPED line.
The onnx package's checker validates the file where onnx is importable.

The last line printed is a JSON object of the largest absolute differences; the exit status is
non-zero on any failure (including a difference over the tolerance).
"""

import json
import struct
import sys

import numpy as np
import onnxruntime as ort

TOL = 1e-5


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n :]
    tensors = {}
    for name, h in header.items():
        assert h["dtype"] == "F32", (name, h["dtype"])
        a, b = h["data_offsets"]
        t = np.frombuffer(body[a:b], dtype="<f4").reshape(h["shape"])
        tensors[name] = t
    return tensors, meta


def conv(x, w, b, pad):
    """x [N, Ci, H, W], w [Co, Ci, k, k], b [Co] or None: stride 1, zero padding `pad` on
    every side (the output (H + 2 pad - k + 1) x (W + 2 pad - k + 1))."""
    n, ci, h, wd = x.shape
    k = w.shape[2]
    xp = np.zeros((n, ci, h + 2 * pad, wd + 2 * pad))
    xp[:, :, pad : pad + h, pad : pad + wd] = x
    oh, ow = h + 2 * pad - k + 1, wd + 2 * pad - k + 1
    out = np.zeros((n, w.shape[0], oh, ow))
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None]
    for ky in range(k):
        for kx in range(k):
            patch = xp[:, :, ky : ky + oh, kx : kx + ow]
            out += np.einsum("nihw,oi->nohw", patch, w[:, :, ky, kx].astype(np.float64))
    return out


def numpy_forward(t, x, meta):
    """The network from its weights alone, float64: x [N, C, H, W]. The stem's padding and
    the value's squashing are read from the metadata (the weights do not say them)."""
    relu = lambda v: np.maximum(v, 0.0)
    lin = lambda v, name: v @ t[name + ".weight"].astype(np.float64).T + t[name + ".bias"]
    f64 = lambda name: t[name].astype(np.float64)[None, :, None, None]

    def layer(v, conv_name, bn_name, pad):
        """A convolution (its bias if it has one), then its batch normalisation if any."""
        k = t[conv_name + ".weight"].shape[2]
        v = conv(v, t[conv_name + ".weight"], t.get(conv_name + ".bias"), pad if k == 3 else 0)
        if bn_name + ".weight" in t:
            inv = 1.0 / np.sqrt(f64(bn_name + ".running_var") + 1e-5)
            v = f64(bn_name + ".weight") * ((v - f64(bn_name + ".running_mean")) * inv)
            v = v + f64(bn_name + ".bias")
        return v

    x = x.astype(np.float64)
    if "stem.weight" in t:
        stem_pad = 0 if "stem valid" in meta.get("arch", "") else 1
        x = relu(layer(x, "stem", "stem.bn", stem_pad))
        b = 0
        while f"blocks.{b}.conv1.weight" in t:
            p = f"blocks.{b}."
            convs = 3 if p + "conv3.weight" in t else 2
            u = x
            for k in range(1, convs + 1):
                u = layer(u, f"{p}conv{k}", f"{p}bn{k}", 1)
                u = relu(u + x) if k == convs else relu(u)
            x = u
            b += 1
    else:
        x = x.reshape(x.shape[0], -1)
        l = 0
        while f"mlp.{l}.weight" in t:
            x = relu(lin(x, f"mlp.{l}"))
            l += 1
    if "policy.conv.weight" in t:
        p = relu(layer(x, "policy.conv", "policy.bn", 0)).reshape(x.shape[0], -1)
        logits = lin(p, "policy.fc")
        v = relu(layer(x, "value.conv", "value.bn", 0)).reshape(x.shape[0], -1)
        pre = lin(relu(lin(v, "value.fc1")), "value.fc2")
    else:
        x = x.reshape(x.shape[0], -1)
        logits, pre = lin(x, "policy"), lin(x, "value")
    if "sigmoid" in meta.get("outputs", ""):
        return logits, 1.0 / (1.0 + np.exp(-pre))
    return logits, np.tanh(pre)


def torch_forward(t, x):
    """The weights loaded by name into a torch.nn.Module (the layout docs/network.md gives)."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1)

        def forward(self, x):
            return torch.relu(self.conv2(torch.relu(self.conv1(x))) + x)

    class Net(nn.Module):
        def __init__(self, t):
            super().__init__()
            feat = t["policy.weight"].shape[1]
            self.resnet = "stem.weight" in t
            if self.resnet:
                co, ci = t["stem.weight"].shape[:2]
                self.stem = nn.Conv2d(ci, co, 3, padding=1)
                nb = len({k.split(".")[1] for k in t if k.startswith("blocks.")})
                self.blocks = nn.ModuleList(Block(co) for _ in range(nb))
            else:
                nl = len({k.split(".")[1] for k in t if k.startswith("mlp.")})
                self.mlp = nn.ModuleList(
                    nn.Linear(*t[f"mlp.{l}.weight"].shape[::-1]) for l in range(nl)
                )
            self.policy = nn.Linear(feat, t["policy.weight"].shape[0])
            self.value = nn.Linear(feat, 1)

        def forward(self, x):
            if self.resnet:
                x = torch.relu(self.stem(x))
                for b in self.blocks:
                    x = b(x)
                x = x.flatten(1)
            else:
                x = x.flatten(1)
                for l in self.mlp:
                    x = torch.relu(l(x))
            return self.policy(x), torch.tanh(self.value(x))

    net = Net(t)
    net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in t.items()}, strict=True)
    with torch.no_grad():
        p, v = net(torch.from_numpy(x))
    return p.numpy(), v.numpy()


def main():
    cases_path, onnx_path, st_path = sys.argv[1:4]
    with open(cases_path) as f:
        cases = json.load(f)
    c, h, w = cases["input"]
    a = cases["actions"]
    pos = cases["positions"]
    x = np.array([p["planes"] for p in pos], dtype=np.float32).reshape(len(pos), c, h, w)
    want_p = np.array([p["policy_logits"] for p in pos], dtype=np.float64)
    want_v = np.array([[p["value"]] for p in pos], dtype=np.float64)
    result = {"positions": len(pos)}
    failures = []

    def compare(what, got_p, got_v):
        assert got_p.shape == (len(pos), a), (what, got_p.shape)
        assert got_v.shape == (len(pos), 1), (what, got_v.shape)
        dp = float(np.max(np.abs(got_p - want_p)))
        dv = float(np.max(np.abs(got_v - want_v)))
        result[what] = {"policy": dp, "value": dv}
        print(f"{what}: max |difference| policy logits {dp:.3g}, value {dv:.3g}")
        if not (dp <= TOL and dv <= TOL):
            failures.append(what)

    try:
        import onnx

        onnx.checker.check_model(onnx.load(onnx_path), full_check=True)
        print(f"onnx.checker: the model is valid (onnx {onnx.__version__})")
        result["onnx_checker"] = True
    except ImportError:
        print("onnx.checker: onnx not installed, not run")
        result["onnx_checker"] = None

    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    ins = [(i.name, i.shape) for i in sess.get_inputs()]
    outs = [(o.name, o.shape) for o in sess.get_outputs()]
    assert ins == [("planes", ["N", c, h, w])], ins
    assert outs == [("policy_logits", ["N", a]), ("value", ["N", 1])], outs
    meta = sess.get_modelmeta()
    assert meta.producer_name == "tabula", meta.producer_name
    got_p, got_v = sess.run(["policy_logits", "value"], {"planes": x})
    compare("onnxruntime", got_p.astype(np.float64), got_v.astype(np.float64))
    one_p, one_v = sess.run(None, {"planes": x[:1]})
    assert one_p.shape == (1, a) and one_v.shape == (1, 1)
    result["onnxruntime_version"] = ort.__version__

    t, st_meta = read_safetensors(st_path)
    assert st_meta.get("format") == "pt", st_meta
    result["metadata"] = st_meta
    # NumPy's forward pass knows every architecture; the PyTorch module the basic nets
    # (MLP, basic blocks, dense heads, a padded stem): the others are checked by ONNX Runtime
    # and NumPy (and, in the unit tests, by an interpreter of the exported graph).
    compare("numpy", *numpy_forward(t, x, st_meta))
    basic = not any(
        "running_mean" in k or k.startswith("policy.conv") or ".conv3." in k for k in t
    ) and "stem valid" not in st_meta.get("arch", "")
    if basic:
        try:
            import torch  # noqa: F401

            have_torch = True
        except ImportError:
            have_torch = False
        if have_torch:
            got_p, got_v = torch_forward(t, x)
            compare("torch", got_p.astype(np.float64), got_v.astype(np.float64))
            result["torch_version"] = torch.__version__
        else:
            print("!!!!!!!! SKIPPED: torch not installed: the PyTorch check did not run !!!!!!!!")
            result["torch"] = None
    else:
        print("torch: not run (batch norm, bottleneck, conv heads or a valid stem: ONNX Runtime and NumPy only)")

    result["failures"] = failures
    print(json.dumps(result))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
