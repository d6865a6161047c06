use std::collections::HashMap;

use super::*;
use crate::encode::Planes;
use crate::{Arch, Head, ResNet, Stem};
use tabula_core::rng::{stream, uniform_index};

fn layout(arch: &Arch) -> Layout {
    let input = Planes {
        channels: 2,
        height: 4,
        width: 5,
    };
    Layout::new(arch, input, 6)
}

fn archs() -> Vec<Arch> {
    vec![
        Arch::Mlp {
            hidden: vec![12, 8],
        },
        Arch::Mlp { hidden: vec![] },
        Arch::ResNet(ResNet::basic(2, 3)),
        Arch::ResNet(ResNet::basic(0, 2)),
        Arch::ResNet(ResNet {
            bottleneck: Some(2),
            batch_norm: true,
            head: Head::Conv {
                policy_channels: 2,
                value_channels: 1,
                value_hidden: 5,
            },
            ..ResNet::basic(2, 3)
        }),
        // Liu et al.'s shape: an unpadded stem (a 4 x 5 board, a 2 x 3 trunk), biases
        // before the normalisations.
        Arch::ResNet(ResNet {
            stem: Stem::Valid,
            conv_bias: true,
            ..liu_like()
        }),
        // The biases alone.
        Arch::ResNet(ResNet {
            conv_bias: true,
            ..liu_like()
        }),
    ]
}

/// A small bottleneck net with batch normalisation and conv heads.
fn liu_like() -> ResNet {
    ResNet {
        bottleneck: Some(2),
        batch_norm: true,
        head: Head::Conv {
            policy_channels: 3,
            value_channels: 1,
            value_hidden: 4,
        },
        ..ResNet::basic(2, 3)
    }
}

/// Initial weights plus a little noise on every parameter (init leaves the biases 0, which
/// would hide a misplaced bias).
fn params(l: &Layout, seed: u64) -> Vec<f32> {
    let mut p = l.init(&mut stream(seed, "export-test"));
    let mut rng = stream(seed, "export-test-noise");
    for x in &mut p {
        *x += (uniform_index(&mut rng, 201) as f32 - 100.0) / 400.0;
    }
    p
}

fn position(n: usize, rng: &mut tabula_core::rng::StreamRng) -> Vec<f32> {
    (0..n)
        .map(|_| [0.0, 1.0, 0.37][uniform_index(rng, 3)])
        .collect()
}

/// Runs the graph on one position as ONNX would (an independent interpreter of the operator
/// list, in f64): the outputs by name.
fn interpret(g: &Graph, x: &[f32]) -> HashMap<String, (Vec<usize>, Vec<f64>)> {
    let [c, h, w] = g.input;
    let tensors: HashMap<&str, &Tensor> = g.tensors.iter().map(|t| (&t.name[..], t)).collect();
    let mut vals: HashMap<String, (Vec<usize>, Vec<f64>)> = HashMap::new();
    vals.insert(
        INPUT.into(),
        (vec![c, h, w], x.iter().map(|&v| f64::from(v)).collect()),
    );
    for n in &g.nodes {
        let (shape, x) = vals[&n.inputs[0]].clone();
        let out = match n.op {
            Op::Relu => (shape, x.iter().map(|v| v.max(0.0)).collect()),
            Op::Tanh => (shape, x.iter().map(|v| v.tanh()).collect()),
            Op::Sigmoid => (shape, x.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect()),
            Op::Identity => (shape, x),
            Op::Add => {
                let (_, y) = &vals[&n.inputs[1]];
                (shape, x.iter().zip(y).map(|(a, b)| a + b).collect())
            }
            Op::Flatten => (vec![x.len()], x),
            Op::Gemm => {
                let (wt, b) = (tensors[&n.inputs[1][..]], tensors[&n.inputs[2][..]]);
                let (o, i) = (wt.shape[0], wt.shape[1]);
                assert_eq!(i, x.len(), "{}", n.output);
                let y = (0..o)
                    .map(|r| {
                        f64::from(b.data[r])
                            + (0..i)
                                .map(|k| f64::from(wt.data[r * i + k]) * x[k])
                                .sum::<f64>()
                    })
                    .collect();
                (vec![o], y)
            }
            Op::Conv3x3 | Op::Conv3x3Valid | Op::Conv1x1 => {
                let wt = tensors[&n.inputs[1][..]];
                let bias = n.inputs.get(2).map(|b| tensors[&b[..]]);
                let (co, ci, k) = (wt.shape[0], wt.shape[1], wt.shape[2]);
                let (h, w) = (shape[1], shape[2]);
                assert_eq!(shape[0], ci, "{}", n.output);
                // Padding r on every side: the output is (h + 2r - k + 1) x (w + 2r - k + 1).
                let r = if n.op == Op::Conv3x3 { 1 } else { 0 };
                let (oh, ow) = (h + 2 * r + 1 - k, w + 2 * r + 1 - k);
                let mut y = vec![0.0; co * oh * ow];
                for o in 0..co {
                    for yy in 0..oh {
                        for xx in 0..ow {
                            let mut s = bias.map_or(0.0, |b| f64::from(b.data[o]));
                            for i in 0..ci {
                                for ky in 0..k {
                                    for kx in 0..k {
                                        let (sy, sx) = (yy + ky, xx + kx);
                                        if sy < r || sx < r || sy >= h + r || sx >= w + r {
                                            continue;
                                        }
                                        let v = x[(i * h + sy - r) * w + sx - r];
                                        s += f64::from(wt.data[((o * ci + i) * k + ky) * k + kx])
                                            * v;
                                    }
                                }
                            }
                            y[(o * oh + yy) * ow + xx] = s;
                        }
                    }
                }
                (vec![co, oh, ow], y)
            }
            Op::BatchNorm => {
                let t = |k: usize| tensors[&n.inputs[k][..]];
                let (g, b, m, v) = (t(1), t(2), t(3), t(4));
                let area = shape[1] * shape[2];
                let y = x
                    .iter()
                    .enumerate()
                    .map(|(q, &xv)| {
                        let c = q / area;
                        let inv = 1.0 / (f64::from(v.data[c]) + 1e-5).sqrt();
                        f64::from(g.data[c]) * (xv - f64::from(m.data[c])) * inv
                            + f64::from(b.data[c])
                    })
                    .collect();
                (shape, y)
            }
        };
        vals.insert(n.output.clone(), out);
    }
    vals
}

/// The exported graph computes what `Layout::forward` does: logits and the value head's
/// squashing (tanh or sigmoid) of the value, within 1e-5, on every architecture.
#[test]
fn the_graph_computes_the_network() {
    for (k, arch) in archs().iter().enumerate() {
        // Both value heads, alternating over the architectures.
        let head = [ValueHead::Tanh, ValueHead::Sigmoid][k % 2];
        let l = layout(arch).with_value_head(head);
        let p = params(&l, k as u64);
        let g = Graph::of(&l, &p).unwrap();
        // Every weight is exported once.
        let n: usize = g.tensors.iter().map(|t| t.data.len()).sum();
        assert_eq!(n, l.params(), "{arch:?}");
        let mut s = l.scratch();
        let mut rng = stream(k as u64, "export-test-positions");
        for _ in 0..5 {
            let x = position(l.input().len(), &mut rng);
            let pre = l.forward(&p, &x, &mut s);
            let vals = interpret(&g, &x);
            let (shape, logits) = &vals[POLICY];
            assert_eq!(shape, &vec![6]);
            for (a, b) in logits.iter().zip(&s.logits) {
                assert!((a - f64::from(*b)).abs() < 1e-5, "{arch:?}: {a} vs {b}");
            }
            let v = vals[VALUE].1[0];
            let want = match head {
                ValueHead::Tanh => f64::from(pre).tanh(),
                ValueHead::Sigmoid => l.unit_value(pre),
            };
            assert!((v - want).abs() < 1e-5, "{arch:?} {head:?}");
        }
    }
}

#[test]
fn a_wrong_parameter_count_is_refused() {
    let l = layout(&archs()[0]);
    let e = Graph::of(&l, &[0.0; 3]).unwrap_err();
    assert_eq!(
        e,
        ExportError::Params {
            expected: l.params(),
            got: 3
        }
    );
    assert!(e.to_string().contains("3 were given"), "{e}");
}

/// A protobuf field as read back: a varint or a run of bytes.
#[derive(Clone, Debug, PartialEq)]
enum Field {
    Int(u64),
    Bytes(Vec<u8>),
}

/// Reads a protobuf message (wire types 0 and 2 only, as the writer uses) into its fields in
/// order.
fn read(mut b: &[u8]) -> Vec<(u32, Field)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
        }
        panic!("varint too long")
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        let field = (key >> 3) as u32;
        match key & 7 {
            0 => out.push((field, Field::Int(varint(&mut b)))),
            2 => {
                let n = varint(&mut b) as usize;
                out.push((field, Field::Bytes(b[..n].to_vec())));
                b = &b[n..];
            }
            t => panic!("wire type {t}"),
        }
    }
    out
}

fn all(m: &[(u32, Field)], f: u32) -> Vec<Field> {
    m.iter()
        .filter(|(k, _)| *k == f)
        .map(|(_, v)| v.clone())
        .collect()
}

fn one_int(m: &[(u32, Field)], f: u32) -> u64 {
    match &all(m, f)[..] {
        [Field::Int(v)] => *v,
        x => panic!("field {f}: {x:?}"),
    }
}

fn one_bytes(m: &[(u32, Field)], f: u32) -> Vec<u8> {
    match &all(m, f)[..] {
        [Field::Bytes(v)] => v.clone(),
        x => panic!("field {f}: {x:?}"),
    }
}

fn text(m: &[(u32, Field)], f: u32) -> String {
    String::from_utf8(one_bytes(m, f)).unwrap()
}

fn le(data: &[f32]) -> Vec<u8> {
    data.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Every field `f` of `m`, each a message, read.
fn messages(m: &[(u32, Field)], f: u32) -> Vec<Vec<(u32, Field)>> {
    all(m, f)
        .iter()
        .map(|x| match x {
            Field::Bytes(b) => read(b),
            Field::Int(_) => panic!("field {f}: a message expected"),
        })
        .collect()
}

/// Every field `f` of `m`, each an integer.
fn ints(m: &[(u32, Field)], f: u32) -> Vec<u64> {
    all(m, f)
        .into_iter()
        .map(|x| match x {
            Field::Int(v) => v,
            Field::Bytes(_) => panic!("field {f}: an integer expected"),
        })
        .collect()
}

/// Every field `f` of `m`, each a string.
fn strings(m: &[(u32, Field)], f: u32) -> Vec<String> {
    all(m, f)
        .into_iter()
        .map(|x| match x {
            Field::Bytes(b) => String::from_utf8(b).unwrap(),
            Field::Int(_) => panic!("field {f}: a string expected"),
        })
        .collect()
}

/// The ONNX file read back with onnx.proto's field numbers: IR 8, opset 13, the nodes in
/// order with their attributes, every weight as an initializer with its name, dims and bytes,
/// the input with a symbolic batch dimension, the metadata.
#[test]
fn the_onnx_file_reads_back() {
    let l = layout(&archs()[2]);
    let p = params(&l, 7);
    let g = Graph::of(&l, &p).unwrap();
    let bytes = g.onnx(&[("run".into(), "3".into())]).unwrap();
    let m = read(&bytes);
    assert_eq!(one_int(&m, 1), 8);
    assert_eq!(text(&m, 2), "tabula");
    let opset = read(&one_bytes(&m, 8));
    assert_eq!((text(&opset, 1), one_int(&opset, 2)), (String::new(), 13));
    let meta: HashMap<String, String> = messages(&m, 14)
        .iter()
        .map(|e| (text(e, 1), text(e, 2)))
        .collect();
    assert_eq!(meta["run"], "3");
    assert_eq!(meta["arch"], "resnet 2x3");
    assert_eq!(meta["onnx_opset"], "13");
    let graph = read(&one_bytes(&m, 7));
    let nodes = messages(&graph, 1);
    let ops: Vec<String> = nodes.iter().map(|n| text(n, 4)).collect();
    assert_eq!(
        ops.join(" "),
        "Conv Relu Conv Relu Conv Add Relu Conv Relu Conv Add Relu Flatten Gemm Gemm Tanh"
    );
    // A residual block adds its input: the Add of block 0 reads the stem's ReLU.
    assert_eq!(strings(&nodes[5], 1), ["blocks.0.conv2", "stem.relu"]);
    assert_eq!(
        strings(&nodes[0], 1),
        ["planes", "stem.weight", "stem.bias"]
    );
    let attrs: Vec<(String, Vec<u64>, u64)> = messages(&nodes[0], 5)
        .iter()
        .map(|a| (text(a, 1), ints(a, 8), one_int(a, 20)))
        .collect();
    assert_eq!(attrs[1], ("pads".into(), vec![1, 1, 1, 1], 7));
    let gemm = read(&one_bytes(&nodes[13], 5));
    assert_eq!((text(&gemm, 1), one_int(&gemm, 3)), ("transB".into(), 1));
    assert_eq!(text(&nodes[15], 2), "value");
    // The initializers: every tensor, in order, with its bytes.
    let inits = messages(&graph, 5);
    assert_eq!(inits.len(), g.tensors.len());
    for (i, t) in inits.iter().zip(&g.tensors) {
        let dims: Vec<usize> = ints(i, 1).into_iter().map(|v| v as usize).collect();
        assert_eq!(dims, t.shape, "{}", t.name);
        assert_eq!(one_int(i, 2), 1, "FLOAT");
        assert_eq!(text(i, 8), t.name);
        assert_eq!(one_bytes(i, 9), le(&t.data));
    }
    // The input: float [N, 2, 4, 5], N symbolic; two outputs.
    let input = read(&one_bytes(&graph, 11));
    assert_eq!(text(&input, 1), "planes");
    let tt = read(&one_bytes(&read(&one_bytes(&input, 2)), 1));
    assert_eq!(one_int(&tt, 1), 1);
    let dims: Vec<String> = messages(&read(&one_bytes(&tt, 2)), 1)
        .iter()
        .map(|d| match &d[0] {
            (1, Field::Int(v)) => v.to_string(),
            (2, Field::Bytes(s)) => String::from_utf8(s.clone()).unwrap(),
            x => panic!("{x:?}"),
        })
        .collect();
    assert_eq!(dims, ["N", "2", "4", "5"]);
    let outputs: Vec<String> = messages(&graph, 12).iter().map(|o| text(o, 1)).collect();
    assert_eq!(outputs, ["policy_logits", "value"]);
}

/// The safetensors file: header length, JSON header with dtype, PyTorch shapes and
/// contiguous offsets, 8-byte aligned data equal to the tensors, the metadata as strings.
#[test]
fn the_safetensors_file_reads_back() {
    for arch in [&archs()[0], &archs()[2]] {
        let l = layout(arch);
        let p = params(&l, 3);
        let g = Graph::of(&l, &p).unwrap();
        let bytes = g.safetensors(&[("iteration".into(), "4".into())]);
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert!((8 + n).is_multiple_of(8));
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
        let data = &bytes[8 + n..];
        assert_eq!(data.len(), 4 * l.params());
        let meta = &header["__metadata__"];
        assert_eq!(meta["iteration"], "4");
        assert_eq!(meta["format"], "pt");
        assert_eq!(meta["arch"], g.arch.as_str());
        assert_eq!(
            header.as_object().unwrap().len(),
            g.tensors.len() + 1,
            "every tensor and the metadata"
        );
        let mut at = 0;
        for t in &g.tensors {
            let h = &header[&t.name];
            assert_eq!(h["dtype"], "F32");
            assert_eq!(h["shape"], serde_json::json!(t.shape));
            let (a, b) = (
                h["data_offsets"][0].as_u64().unwrap() as usize,
                h["data_offsets"][1].as_u64().unwrap() as usize,
            );
            assert_eq!(a, at, "{}", t.name);
            assert_eq!(&data[a..b], &le(&t.data)[..]);
            at = b;
        }
    }
    // A dense weight is [out, in]: policy.weight's row a is action a's weights.
    let l = layout(&archs()[0]);
    let p = params(&l, 3);
    let g = Graph::of(&l, &p).unwrap();
    let t = g
        .tensors
        .iter()
        .find(|t| t.name == "policy.weight")
        .unwrap();
    assert_eq!(t.shape, [6, 8]);
    let d = l
        .graph
        .ops
        .iter()
        .find_map(|op| match op.layer {
            crate::graph::Layer::Dense(d) if op.y == l.graph.logits => Some(d),
            _ => None,
        })
        .unwrap();
    assert_eq!(t.data[8 + 3], p[d.w + 3 * d.n_out + 1]);
}

/// An unpadded stem is a Conv with pads 0 and the trunk runs on the interior; the
/// convolutions' biases before batch normalisation are exported under PyTorch's names, each
/// before its normalisation's tensors.
#[test]
fn a_valid_stem_and_conv_biases_export() {
    let l = layout(&archs()[5]);
    let p = params(&l, 9);
    let g = Graph::of(&l, &p).unwrap();
    assert_eq!(
        g.arch,
        "resnet 2x3 stem valid bottleneck 2 batch_norm conv_bias conv-heads"
    );
    let names: Vec<&str> = g.tensors.iter().map(|t| &t.name[..]).collect();
    assert_eq!(
        names[..8],
        [
            "stem.weight",
            "stem.bias",
            "stem.bn.weight",
            "stem.bn.bias",
            "stem.bn.running_mean",
            "stem.bn.running_var",
            "blocks.0.conv1.weight",
            "blocks.0.conv1.bias",
        ]
    );
    // The policy head flattens 3 channels of the 2 x 3 trunk.
    let fc = g.tensors.iter().find(|t| t.name == "policy.fc.weight");
    assert_eq!(fc.map(|t| t.shape.clone()), Some(vec![6, 18]));
    let bytes = g.onnx(&[]).unwrap();
    let graph = read(&one_bytes(&read(&bytes), 7));
    let nodes = messages(&graph, 1);
    let pads = |k: usize| -> Vec<u64> {
        messages(&nodes[k], 5)
            .iter()
            .find(|a| text(a, 1) == "pads")
            .map(|a| ints(a, 8))
            .unwrap_or_default()
    };
    assert_eq!(
        strings(&nodes[0], 1),
        ["planes", "stem.weight", "stem.bias"]
    );
    assert_eq!(pads(0), [0, 0, 0, 0]);
    // The first block's 3x3 keeps the trunk's size: pads 1.
    let conv2 = nodes
        .iter()
        .position(|n| text(n, 2) == "blocks.0.conv2")
        .unwrap();
    assert_eq!(pads(conv2), [1, 1, 1, 1]);
}
