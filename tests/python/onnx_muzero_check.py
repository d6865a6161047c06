"""Checks MuZero's exported networks against tabula's own outputs (tests/onnx_export.rs,
`exported_muzero_networks_match_onnx_runtime`).

Usage: onnx_muzero_check.py CASES.json

CASES.json: {"graphs": [{"name": N, "file": PATH.onnx, "cases": [{"x": [floats], "logits":
[floats], "value": float}]}]}: each network's input rows and what tabula computes on them
(the value as the file's `value` output reads: tanh, or the dynamics' raw reward). ONNX
Runtime runs each file on each row (the row reshaped to the file's input shape, batch 1) and
on all rows at once. The last line printed is a JSON object: the largest absolute
difference per network and output, and the failures (a difference over 1e-5, or a file
whose outputs are not `policy_logits` and `value`); the exit status is non-zero on any.
"""

import json
import sys

import numpy as np
import onnxruntime as ort

TOL = 1e-5


def main():
    cases = json.load(open(sys.argv[1]))
    report = {"networks": {}, "failures": []}
    for g in cases["graphs"]:
        sess = ort.InferenceSession(g["file"], providers=["CPUExecutionProvider"])
        inp = sess.get_inputs()[0]
        outs = [o.name for o in sess.get_outputs()]
        if outs != ["policy_logits", "value"]:
            report["failures"].append(f"{g['name']}: outputs {outs}")
            continue
        shape = [d if isinstance(d, int) else -1 for d in inp.shape]
        xs = np.array([c["x"] for c in g["cases"]], dtype=np.float32)
        batch = xs.reshape([len(xs)] + shape[1:])
        logits, value = sess.run(None, {inp.name: batch})
        want_l = np.array([c["logits"] for c in g["cases"]])
        want_v = np.array([c["value"] for c in g["cases"]])
        dl = float(np.abs(logits - want_l).max())
        dv = float(np.abs(value.reshape(-1) - want_v).max())
        # One row alone: the batch dimension is symbolic.
        l1, v1 = sess.run(None, {inp.name: batch[:1]})
        d1 = float(max(np.abs(l1[0] - want_l[0]).max(), abs(float(v1.reshape(-1)[0]) - want_v[0])))
        report["networks"][g["name"]] = {"policy": dl, "value": dv, "one_row": d1,
                                         "rows": len(xs)}
        for what, d in [("policy", dl), ("value", dv), ("one row", d1)]:
            if not d <= TOL:
                report["failures"].append(f"{g['name']} {what}: {d}")
    print(json.dumps(report))
    sys.exit(1 if report["failures"] else 0)


if __name__ == "__main__":
    main()
