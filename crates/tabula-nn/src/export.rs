//! A network out of tabula: an ONNX model (graph and weights) and the weights alone as
//! safetensors (docs/network.md, "Export").
//!
//! The exporter walks the [`Layout`] once into a short list of operations ([`Graph`]: nodes
//! over named values, and the weights as named tensors); the two writers serialise that list.
//! A new layer kind adds a case to the walk and, where ONNX needs a new operator, one to
//! [`Op`].
//!
//! - **ONNX**: a `ModelProto` (IR version [`IR_VERSION`], operator set [`OPSET`] of the default
//!   domain), protobuf written by hand (a few field numbers of onnx.proto: no dependency).
//!   Input `planes` float `[N, C, H, W]` (`N` a symbolic batch dimension), outputs
//!   `policy_logits` `[N, A]` and `value` `[N, 1]`, the value head after its squashing
//!   ([`super::ValueHead`]: tanh, in [-1, 1], tabula's [0, 1] value `(value + 1) / 2`; or
//!   sigmoid, the [0, 1] value itself). Operators: Conv (3x3 with pads 1, or pads 0 for an
//!   unpadded stem; 1x1), BatchNormalization, Relu, Add, Flatten, Gemm (`transB = 1`), Tanh or
//!   Sigmoid. The weights are initializers (raw little-endian f32).
//! - **safetensors**: an 8-byte little-endian header length, a JSON header
//!   `{name: {"dtype": "F32", "shape", "data_offsets"}, "__metadata__": {...}}` padded with
//!   spaces to a multiple of 8 bytes, then the tensors' little-endian bytes in layout order.
//!
//! Tensor names and shapes are PyTorch's (`torch.nn.Linear`, `torch.nn.Conv2d`), the same in
//! both files: `mlp.{l}.weight` `[out, in]` and `.bias` `[out]`; `stem.weight`
//! `[channels, C, 3, 3]`; `blocks.{b}.conv1.weight`, `blocks.{b}.conv2.weight`
//! `[channels, channels, 3, 3]` (and their biases, also before a batch normalisation when the
//! net keeps them: `conv_bias`); `policy.weight` `[A, F]`, `value.weight`
//! `[1, F]` with F the flattened trunk output (channel-major `[c][y][x]`, as ONNX Flatten of
//! NCHW). tabula stores dense weights `[in][out]`; they are transposed on the way out.

use super::engine::BN_EPS;
use super::graph::{Act, Conv, Dense, Layer, Norm};
use super::{Layout, ValueHead};

/// The ONNX IR version written (IR 8: ONNX 1.10, 2021).
pub const IR_VERSION: i64 = 8;
/// The operator set of the default ONNX domain the graph is written against.
pub const OPSET: i64 = 13;

/// The largest ONNX file written: protobuf messages are limited to 2 GiB.
const ONNX_MAX_BYTES: usize = (1 << 31) - (1 << 20);

/// Why a network cannot be exported.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExportError {
    #[error("the network has {expected} parameters but {got} were given")]
    Params { expected: usize, got: usize },
    #[error(
        "the ONNX model would take {bytes} bytes, over protobuf's 2 GiB limit: export the \
         weights as .safetensors instead"
    )]
    TooLarge { bytes: usize },
}

/// The ONNX operators the export uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// 3x3, stride 1, zero padding 1 on every side: inputs (x, weight[, bias]).
    Conv3x3,
    /// 3x3, stride 1, no padding (an unpadded stem): inputs (x, weight[, bias]).
    Conv3x3Valid,
    /// 1x1, stride 1: inputs (x, weight[, bias]).
    Conv1x1,
    /// Inference-mode batch normalisation: inputs (x, scale, shift, running mean, running
    /// variance), epsilon 1e-5.
    BatchNorm,
    Relu,
    /// Element-wise sum of two values.
    Add,
    /// `[N, C, H, W]` to `[N, C*H*W]` (axis 1).
    Flatten,
    /// `x W^T + b`, `transB = 1`: inputs (x, weight `[out, in]`, bias `[out]`).
    Gemm,
    Tanh,
    Sigmoid,
    /// The value unchanged (a linear value output, [`Graph::with_linear_value`]).
    Identity,
}

impl Op {
    fn onnx_name(self) -> &'static str {
        match self {
            Op::Conv3x3 | Op::Conv3x3Valid | Op::Conv1x1 => "Conv",
            Op::BatchNorm => "BatchNormalization",
            Op::Relu => "Relu",
            Op::Add => "Add",
            Op::Flatten => "Flatten",
            Op::Gemm => "Gemm",
            Op::Tanh => "Tanh",
            Op::Sigmoid => "Sigmoid",
            Op::Identity => "Identity",
        }
    }
}

/// One operation: its inputs (values or tensors, by name) and the value it makes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub op: Op,
    pub inputs: Vec<String>,
    pub output: String,
}

/// A named weight tensor, row-major in `shape`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// The graph's input name.
pub(crate) const INPUT: &str = "planes";
/// The policy output's name.
pub(crate) const POLICY: &str = "policy_logits";
/// The value output's name (after the value head's squashing).
pub(crate) const VALUE: &str = "value";

/// A network as operations over named values, with its weights.
#[derive(Clone, Debug)]
pub struct Graph {
    /// Input planes: channels, height, width.
    pub input: [usize; 3],
    pub actions: usize,
    /// In execution order; the first reads [`INPUT`], two make [`POLICY`] and [`VALUE`].
    pub(crate) nodes: Vec<Node>,
    /// In layout order.
    pub tensors: Vec<Tensor>,
    /// The architecture in words (`mlp [64, 64]`, `resnet 2x16`).
    pub arch: String,
    /// How [`VALUE`] reads, in words (its squashing and scale).
    pub value: &'static str,
}

/// The value output in words, for the metadata and the command's message.
fn value_words(v: ValueHead) -> &'static str {
    match v {
        ValueHead::Tanh => "tanh, in [-1, 1]; tabula's [0, 1] value is (value + 1) / 2",
        ValueHead::Sigmoid => "sigmoid, in [0, 1]: tabula's value itself",
    }
}

struct Walk<'a> {
    p: &'a [f32],
    nodes: Vec<Node>,
    tensors: Vec<Tensor>,
}

impl Walk<'_> {
    fn node(&mut self, op: Op, inputs: &[&str], output: String) -> String {
        self.nodes.push(Node {
            op,
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            output: output.clone(),
        });
        output
    }

    fn tensor(&mut self, name: String, shape: Vec<usize>, data: Vec<f32>) -> String {
        self.tensors.push(Tensor {
            name: name.clone(),
            shape,
            data,
        });
        name
    }

    /// A dense layer as Gemm; its weights `[in][out]` written `[out][in]`.
    fn dense(&mut self, d: &Dense, name: &str, x: &str, output: String) -> String {
        let w = &self.p[d.w..d.w + d.n_in * d.n_out];
        let mut t = vec![0.0f32; w.len()];
        for i in 0..d.n_in {
            for o in 0..d.n_out {
                t[o * d.n_in + i] = w[i * d.n_out + o];
            }
        }
        let w = self.tensor(format!("{name}.weight"), vec![d.n_out, d.n_in], t);
        let b = self.p[d.b..d.b + d.n_out].to_vec();
        let b = self.tensor(format!("{name}.bias"), vec![d.n_out], b);
        self.node(Op::Gemm, &[x, &w, &b], output)
    }

    /// A convolution; its weights are already `[out][in][k][k]`.
    fn conv(&mut self, c: &Conv, name: &str, x: &str) -> String {
        let k = if c.taps == 9 { 3 } else { 1 };
        let w = self.p[c.w..c.w + c.cout * c.cin * c.taps].to_vec();
        let w = self.tensor(format!("{name}.weight"), vec![c.cout, c.cin, k, k], w);
        let op = match (k, c.valid) {
            (3, true) => Op::Conv3x3Valid,
            (3, false) => Op::Conv3x3,
            _ => Op::Conv1x1,
        };
        match c.b {
            Some(b) => {
                let b = self.p[b..b + c.cout].to_vec();
                let b = self.tensor(format!("{name}.bias"), vec![c.cout], b);
                self.node(op, &[x, &w, &b], name.to_string())
            }
            None => self.node(op, &[x, &w], name.to_string()),
        }
    }

    /// Batch normalisation with its running statistics (PyTorch's `BatchNorm2d` names).
    fn norm(&mut self, n: &Norm, name: &str, x: &str) -> String {
        let mut t = |key: &str, at: usize| {
            let data = self.p[at..at + n.ch].to_vec();
            self.tensor(format!("{name}.{key}"), vec![n.ch], data)
        };
        let (g, b) = (t("weight", n.gamma), t("bias", n.beta));
        let (m, v) = (t("running_mean", n.mean), t("running_var", n.var));
        self.node(Op::BatchNorm, &[x, &g, &b, &m, &v], name.to_string())
    }
}

/// The architecture in words (`mlp [64, 64]`, `resnet 2x16`, `resnet 9x64 stem valid
/// bottleneck 32 batch_norm conv_bias conv-heads`).
fn arch_words(layout: &Layout) -> String {
    match &layout.arch {
        super::Arch::Mlp { hidden } => format!("mlp {hidden:?}"),
        super::Arch::ResNet(r) => {
            let mut s = format!("resnet {}x{}", r.blocks, r.channels);
            if r.stem == super::Stem::Valid {
                s += " stem valid";
            }
            if let Some(m) = r.bottleneck {
                s += &format!(" bottleneck {m}");
            }
            if r.batch_norm {
                s += " batch_norm";
                // Without normalisation every convolution has its bias anyway.
                if r.conv_bias {
                    s += " conv_bias";
                }
            }
            if let super::Head::Conv { .. } = r.head {
                s += " conv-heads";
            }
            s
        }
    }
}

impl Graph {
    /// The network `layout` with parameters `p` as a graph.
    pub fn of(layout: &Layout, p: &[f32]) -> Result<Graph, ExportError> {
        if p.len() != layout.params() {
            return Err(ExportError::Params {
                expected: layout.params(),
                got: p.len(),
            });
        }
        let mut g = Walk {
            p,
            nodes: Vec::new(),
            tensors: Vec::new(),
        };
        let graph = &layout.graph;
        // The value each buffer holds, and its flattened form once asked for.
        let mut vals: Vec<String> = vec![String::new(); graph.bufs.len()];
        vals[0] = INPUT.to_string();
        let mut flat: Vec<Option<String>> = vec![None; graph.bufs.len()];
        for (op, name) in graph.ops.iter().zip(&graph.names) {
            let x = vals[op.x].clone();
            let out = if op.y == graph.logits {
                POLICY.to_string()
            } else if op.y == graph.value {
                "value_pre".to_string()
            } else {
                name.clone()
            };
            let y = match op.layer {
                Layer::Conv(c) => g.conv(&c, name, &x),
                Layer::Norm(n) => g.norm(&n, name, &x),
                Layer::Dense(d) => {
                    let x = if graph.planes[op.x] > 0 {
                        let f = flat[op.x]
                            .get_or_insert_with(|| g.node(Op::Flatten, &[&x], format!("{x}.flat")));
                        f.clone()
                    } else {
                        x
                    };
                    g.dense(&d, name, &x, out.clone())
                }
            };
            vals[op.y] = match op.act {
                Act::Identity => y,
                Act::Relu => g.node(Op::Relu, &[&y], format!("{name}.relu")),
                Act::AddRelu(k) => {
                    let s = g.node(Op::Add, &[&y, &vals[k]], format!("{name}.add"));
                    g.node(Op::Relu, &[&s], format!("{name}.relu"))
                }
            };
        }
        let squash = match layout.value_head() {
            ValueHead::Tanh => Op::Tanh,
            ValueHead::Sigmoid => Op::Sigmoid,
        };
        g.node(squash, &["value_pre"], VALUE.into());
        let i = layout.input();
        Ok(Graph {
            input: [i.channels, i.height, i.width],
            actions: layout.actions(),
            nodes: g.nodes,
            tensors: g.tensors,
            arch: arch_words(layout),
            value: value_words(layout.value_head()),
        })
    }

    /// The same graph with its value output linear: the value head's raw output, not
    /// squashed (a head trained as a plain number: MuZero's reward, docs/muzero.md), `words`
    /// saying how it reads.
    pub fn with_linear_value(mut self, words: &'static str) -> Graph {
        if let Some(last) = self.nodes.iter_mut().rev().find(|n| n.output == VALUE) {
            last.op = Op::Identity;
        }
        self.value = words;
        self
    }

    /// What the export says of itself (ONNX `metadata_props`, safetensors `__metadata__`),
    /// then `extra` (the run, the iteration...).
    fn metadata(&self, extra: &[(String, String)]) -> Vec<(String, String)> {
        let [c, h, w] = self.input;
        let own = [
            ("producer", format!("tabula {}", env!("CARGO_PKG_VERSION"))),
            ("arch", self.arch.clone()),
            ("input", format!("{INPUT} [N, {c}, {h}, {w}] float32")),
            (
                "outputs",
                format!(
                    "{POLICY} [N, {}] (logits over the whole action space); {VALUE} [N, 1] \
                     ({})",
                    self.actions, self.value
                ),
            ),
            ("onnx_opset", OPSET.to_string()),
            (
                "weights",
                "PyTorch layout: Linear weight [out, in], Conv2d weight [out, in, k, k] \
                 (3x3: padding 1, an unpadded stem's 0)"
                    .to_string(),
            ),
        ];
        own.into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .chain(extra.iter().cloned())
            .collect()
    }

    /// The ONNX model (a serialised `ModelProto`), with `extra` metadata.
    pub fn onnx(&self, extra: &[(String, String)]) -> Result<Vec<u8>, ExportError> {
        let weights: usize = self.tensors.iter().map(|t| 4 * t.data.len()).sum();
        if weights > ONNX_MAX_BYTES {
            return Err(ExportError::TooLarge { bytes: weights });
        }
        let [c, h, w] = self.input;
        let mut m = Pb::default();
        m.int(1, IR_VERSION);
        m.string(2, "tabula");
        m.string(3, env!("CARGO_PKG_VERSION"));
        m.string(
            6,
            &format!(
                "A tabula network ({}): planes -> policy logits and value ({}).",
                self.arch, self.value
            ),
        );
        m.message(7, |g| {
            for (k, n) in self.nodes.iter().enumerate() {
                g.message(1, |p| node(p, n, k));
            }
            g.string(2, "tabula");
            for t in &self.tensors {
                g.message(5, |p| tensor(p, t));
            }
            g.message(11, |p| {
                value_info(p, INPUT, &[Dim::Param("N"), c.into(), h.into(), w.into()])
            });
            g.message(12, |p| {
                value_info(p, POLICY, &[Dim::Param("N"), self.actions.into()])
            });
            g.message(12, |p| value_info(p, VALUE, &[Dim::Param("N"), 1.into()]));
        });
        m.message(8, |o| {
            o.string(1, "");
            o.int(2, OPSET);
        });
        for (k, v) in self.metadata(extra) {
            m.message(14, |e| {
                e.string(1, &k);
                e.string(2, &v);
            });
        }
        Ok(m.0)
    }

    /// The weights as a safetensors file, with `extra` metadata.
    pub fn safetensors(&self, extra: &[(String, String)]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        let mut at = 0usize;
        for t in &self.tensors {
            let end = at + 4 * t.data.len();
            header.insert(
                t.name.clone(),
                serde_json::json!({"dtype": "F32", "shape": t.shape, "data_offsets": [at, end]}),
            );
            at = end;
        }
        let meta: serde_json::Map<String, serde_json::Value> =
            std::iter::once(("format".to_string(), serde_json::Value::String("pt".into())))
                .chain(
                    self.metadata(extra)
                        .into_iter()
                        .map(|(k, v)| (k, serde_json::Value::String(v))),
                )
                .collect();
        header.insert("__metadata__".into(), serde_json::Value::Object(meta));
        let mut json = serde_json::Value::Object(header).to_string().into_bytes();
        // The tensors start 8-byte aligned (the format's own writer pads the header so).
        while !(8 + json.len()).is_multiple_of(8) {
            json.push(b' ');
        }
        let mut out = Vec::with_capacity(8 + json.len() + at);
        out.extend_from_slice(&(json.len() as u64).to_le_bytes());
        out.extend_from_slice(&json);
        for t in &self.tensors {
            for x in &t.data {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out
    }
}

/// A dimension of a value's shape: a number or a symbolic name.
enum Dim {
    Value(usize),
    Param(&'static str),
}

impl From<usize> for Dim {
    fn from(n: usize) -> Dim {
        Dim::Value(n)
    }
}

/// `NodeProto` (onnx.proto): input 1, output 2, name 3, op_type 4, attribute 5.
fn node(p: &mut Pb, n: &Node, k: usize) {
    for i in &n.inputs {
        p.string(1, i);
    }
    p.string(2, &n.output);
    p.string(3, &format!("{}_{k}", n.op.onnx_name()));
    p.string(4, n.op.onnx_name());
    match n.op {
        Op::Conv3x3 => {
            p.message(5, |a| ints(a, "kernel_shape", &[3, 3]));
            p.message(5, |a| ints(a, "pads", &[1, 1, 1, 1]));
            p.message(5, |a| ints(a, "strides", &[1, 1]));
        }
        Op::Conv3x3Valid => {
            p.message(5, |a| ints(a, "kernel_shape", &[3, 3]));
            p.message(5, |a| ints(a, "pads", &[0, 0, 0, 0]));
            p.message(5, |a| ints(a, "strides", &[1, 1]));
        }
        Op::Conv1x1 => {
            p.message(5, |a| ints(a, "kernel_shape", &[1, 1]));
            p.message(5, |a| ints(a, "strides", &[1, 1]));
        }
        Op::BatchNorm => p.message(5, |a| float(a, "epsilon", BN_EPS as f32)),
        Op::Flatten => p.message(5, |a| int(a, "axis", 1)),
        Op::Gemm => p.message(5, |a| int(a, "transB", 1)),
        Op::Relu | Op::Add | Op::Tanh | Op::Sigmoid | Op::Identity => {}
    }
}

/// `AttributeProto` of type FLOAT (1): name 1, f 2 (fixed32), type 20.
fn float(a: &mut Pb, name: &str, v: f32) {
    a.string(1, name);
    a.key(2, 5);
    a.0.extend_from_slice(&v.to_le_bytes());
    a.int(20, 1);
}

/// `AttributeProto` of type INT (2): name 1, i 3, type 20.
fn int(a: &mut Pb, name: &str, v: i64) {
    a.string(1, name);
    a.int(3, v);
    a.int(20, 2);
}

/// `AttributeProto` of type INTS (7): name 1, ints 8 (repeated), type 20.
fn ints(a: &mut Pb, name: &str, vs: &[i64]) {
    a.string(1, name);
    for &v in vs {
        a.int(8, v);
    }
    a.int(20, 7);
}

/// `TensorProto`: dims 1, data_type 2 (FLOAT = 1), name 8, raw_data 9 (little-endian).
fn tensor(p: &mut Pb, t: &Tensor) {
    for &d in &t.shape {
        p.int(1, d as i64);
    }
    p.int(2, 1);
    p.string(8, &t.name);
    let mut raw = Vec::with_capacity(4 * t.data.len());
    for x in &t.data {
        raw.extend_from_slice(&x.to_le_bytes());
    }
    p.bytes(9, &raw);
}

/// `ValueInfoProto` (name 1, type 2) of a float tensor: `TypeProto.tensor_type` 1 {elem_type
/// 1, shape 2 {dim 1 {dim_value 1 | dim_param 2}}}.
fn value_info(p: &mut Pb, name: &str, dims: &[Dim]) {
    p.string(1, name);
    p.message(2, |t| {
        t.message(1, |tt| {
            tt.int(1, 1);
            tt.message(2, |s| {
                for d in dims {
                    s.message(1, |dm| match d {
                        Dim::Value(n) => dm.int(1, *n as i64),
                        Dim::Param(n) => dm.string(2, n),
                    });
                }
            });
        });
    });
}

/// A protobuf message being written (the wire format: a key `field << 3 | wire type`, then a
/// varint (type 0) or a length-prefixed run of bytes (type 2)).
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    /// An int64 or int32 field (negative values as their 64-bit two's complement).
    fn int(&mut self, field: u32, v: i64) {
        self.key(field, 0);
        self.varint(v as u64);
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    fn message(&mut self, field: u32, f: impl FnOnce(&mut Pb)) {
        let mut inner = Pb::default();
        f(&mut inner);
        self.bytes(field, &inner.0);
    }
}

#[cfg(test)]
mod tests;
