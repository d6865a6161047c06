//! tabula's side of the comparison with ONNX Runtime and PyTorch (issue 23; docs/network.md,
//! "Measuring against ONNX Runtime and PyTorch"): for one net, inference at batch 1 and 64
//! (positions/s) and training at batch 256 (samples/s), on one rayon thread, printed as one
//! JSON line per round. `benches/anchors/run.sh` runs it beside `benches/anchors/anchors.py`,
//! which builds the same nets in PyTorch.
//!
//! `cargo run --release --example nn_throughput -- --net NAME [--rounds N] [--seconds S]
//! [--seed N] [--arith fused|separate]`
//!
//! Inputs are random but valid: planes of 0 and 1 (each feature 1 with probability 1/4), a
//! few distinct legal actions, a target distribution over them, an outcome in {0, 1/2, 1}.
//! Training uses the learner's default optimiser (SGD, momentum 0.9, Nesterov, weight decay
//! 1e-4). A net the engine cannot express prints `"supported": false` and no rates (none
//! today: Liu et al.'s net, bottleneck blocks with batch normalisation, is expressed).

use std::process::ExitCode;
use std::time::Instant;

use tabula::nn::throughput::{self, Planes};
use tabula::nn::{Arch, Arith, Example, Head, Layout, ResNet, Simd, Trainer};
use tabula::rng::{StreamRng, stream, uniform_index};

/// The nets of the comparison: name, architecture (None: not expressible), input planes
/// (channels, height, width), actions.
struct NetSpec {
    name: &'static str,
    arch: Option<Arch>,
    planes: (usize, usize, usize),
    actions: usize,
}

fn nets() -> Vec<NetSpec> {
    let res = |blocks, channels| Some(Arch::ResNet(ResNet::basic(blocks, channels)));
    // Liu et al.: a 3x3 stem to 64 channels, 9 bottleneck blocks (1x1 to 32, 3x3, 1x1 to
    // 64), batch normalisation before every ReLU, AlphaGo Zero's heads (docs/network.md).
    let liu = Some(Arch::ResNet(ResNet {
        bottleneck: Some(32),
        batch_norm: true,
        head: Head::Conv {
            policy_channels: 2,
            value_channels: 1,
            value_hidden: 256,
        },
        ..ResNet::basic(9, 64)
    }));
    // Connect Four 7x6: the mover's stones and the opponent's (2 x 6 x 7), 7 columns.
    // Chinese Checkers `checkers:7x7-6`: 3 x 7 x 7 planes, 7 * 7 * 6 = 294 actions.
    // Liu et al.: 7 x 7 x 7 input, 294 actions (docs/network.md).
    vec![
        NetSpec {
            name: "c4-mlp64x64",
            arch: Some(Arch::Mlp {
                hidden: vec![64, 64],
            }),
            planes: (2, 6, 7),
            actions: 7,
        },
        NetSpec {
            name: "c4-res2x16",
            arch: res(2, 16),
            planes: (2, 6, 7),
            actions: 7,
        },
        NetSpec {
            name: "c4-res6x64",
            arch: res(6, 64),
            planes: (2, 6, 7),
            actions: 7,
        },
        NetSpec {
            name: "cc7-res9x32",
            arch: res(9, 32),
            planes: (3, 7, 7),
            actions: 294,
        },
        NetSpec {
            name: "cc7-res9x64",
            arch: res(9, 64),
            planes: (3, 7, 7),
            actions: 294,
        },
        // 9x9 Go: OpenSpiel's four planes, 82 actions (runs/go9-az.toml's net).
        NetSpec {
            name: "go9-res3x32",
            arch: Some(Arch::ResNet(ResNet {
                head: Head::Conv {
                    policy_channels: 2,
                    value_channels: 1,
                    value_hidden: 256,
                },
                ..ResNet::basic(3, 32)
            })),
            planes: (4, 9, 9),
            actions: 82,
        },
        NetSpec {
            name: "liu",
            arch: liu,
            planes: (7, 7, 7),
            actions: 294,
        },
    ]
}

/// FNV-1a over the floats' bit patterns, continuing from `h`.
fn fnv(mut h: u64, xs: &[f32]) -> u64 {
    for x in xs {
        for b in x.to_bits().to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

struct Args {
    net: String,
    rounds: usize,
    seconds: f64,
    seed: u64,
    arith: Arith,
    simd: Simd,
    fuse_norm: bool,
    only: Option<String>,
}

const USAGE: &str = "usage: nn_throughput --net NAME [--rounds N] [--seconds S] [--seed N] \
                     [--arith fused|separate] (the kernels' arithmetic, default fused as in new runs) \
                     [--only b1|b64|train] (measure one rate, the others print 0: for profiling) \
                     [--simd scalar|avx2|avx512] (the kernels' vector path, default the fastest \
                     this CPU has: the paths side by side in one binary) \
                     [--fuse-norm on|off] (inference runs a convolution and its batch \
                     normalisation as one product; default on)";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        net: String::new(),
        rounds: 1,
        seconds: 1.0,
        seed: 1,
        arith: Arith::Fused,
        simd: Simd::detect(),
        fuse_norm: true,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Err(USAGE.to_string());
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let bad = |what: &str| format!("{flag}: expected {what}, got `{value}`");
        match flag.as_str() {
            "--net" => args.net = value.clone(),
            "--rounds" => {
                args.rounds = value
                    .parse()
                    .ok()
                    .filter(|&r| r > 0)
                    .ok_or_else(|| bad("a positive integer"))?
            }
            "--seconds" => {
                args.seconds = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| bad("a positive number of seconds"))?
            }
            "--seed" => args.seed = value.parse().map_err(|_| bad("an integer"))?,
            "--only" => match value.as_str() {
                "b1" | "b64" | "train" => args.only = Some(value),
                _ => return Err(bad("b1, b64 or train")),
            },
            "--arith" => {
                args.arith = match value.as_str() {
                    "fused" => Arith::Fused,
                    "separate" => Arith::Separate,
                    _ => return Err(bad("fused or separate")),
                }
            }
            "--simd" => {
                args.simd = Simd::named(&value)
                    .ok_or_else(|| bad("a vector path this CPU has (scalar, avx2, avx512)"))?
            }
            "--fuse-norm" => {
                args.fuse_norm = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(bad("on or off")),
                }
            }
            _ => return Err(format!("unknown argument `{flag}`\n{USAGE}")),
        }
    }
    if args.net.is_empty() {
        return Err(format!("--net is required\n{USAGE}"));
    }
    Ok(args)
}

fn random_planes(rng: &mut StreamRng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| if uniform_index(rng, 4) == 0 { 1.0 } else { 0.0 })
        .collect()
}

fn random_example(rng: &mut StreamRng, planes: Planes, actions: usize) -> Example {
    let x = random_planes(rng, planes.len());
    // 1 to 8 distinct legal actions (at most all of them), ascending.
    let k = 1 + uniform_index(rng, actions.min(8));
    let mut legal: Vec<u16> = Vec::with_capacity(k);
    while legal.len() < k {
        let a = uniform_index(rng, actions) as u16;
        if !legal.contains(&a) {
            legal.push(a);
        }
    }
    legal.sort_unstable();
    let weights: Vec<f32> = (0..k).map(|_| 1.0 + uniform_index(rng, 9) as f32).collect();
    let total: f32 = weights.iter().sum();
    let target = weights.iter().map(|w| w / total).collect();
    let z = uniform_index(rng, 3) as f32 / 2.0;
    throughput::example(x, legal, target, z)
}

/// Runs `work` (which returns the items it processed) until `seconds` have passed, at least
/// once; returns items per second.
fn rate(seconds: f64, mut work: impl FnMut() -> usize) -> f64 {
    let t = Instant::now();
    let mut done = 0usize;
    loop {
        done += work();
        let secs = t.elapsed().as_secs_f64();
        if secs >= seconds {
            return done as f64 / secs;
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let all = nets();
    let Some(spec) = all.iter().find(|n| n.name == args.net) else {
        let names: Vec<&str> = all.iter().map(|n| n.name).collect();
        eprintln!(
            "unknown net `{}`; the nets are: {}",
            args.net,
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    if let Err(e) = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
    {
        eprintln!("cannot set up the one-thread pool: {e}");
        return ExitCode::FAILURE;
    }
    let Some(arch) = &spec.arch else {
        for round in 0..args.rounds {
            println!(
                "{{\"engine\":\"tabula\",\"net\":\"{}\",\"round\":{round},\"supported\":false,\
                 \"why\":\"bottleneck blocks and batch normalisation are not in crates/tabula-nn/ yet\"}}",
                spec.name
            );
        }
        return ExitCode::SUCCESS;
    };
    let (c, h, w) = spec.planes;
    let planes = throughput::planes(c, h, w);
    let layout = Layout::new(arch, planes, spec.actions)
        .with_arith(args.arith)
        .with_simd(args.simd)
        .with_fused_norm(args.fuse_norm);
    let mut rng = stream(args.seed, "nn-throughput");
    let init = layout.init(&mut rng);
    let positions = 256usize;
    let xs = random_planes(&mut rng, positions * planes.len());
    let examples: Vec<Example> = (0..512)
        .map(|_| random_example(&mut rng, planes, spec.actions))
        .collect();
    let mut scratch = layout.scratch();
    let weights = layout.weights(&init);
    let mut trainer = Trainer::new(&layout);
    let (mut values, mut logits) = (Vec::new(), Vec::new());
    // Warm-up: one pass over a batch.
    throughput::infer_batch(
        &layout,
        &init,
        &weights,
        &xs[..64 * planes.len()],
        &mut scratch,
        &mut values,
        &mut logits,
    );
    // The bits a change to the kernels must keep (or change once, on purpose): the warm-up
    // batch's outputs and the parameters after two training steps from the initial ones.
    let mut bits = fnv(0xcbf2_9ce4_8422_2325, &values);
    bits = fnv(bits, &logits);
    // The two steps also warm up `trainer`, whose buffers grow on its first step (page
    // faults over about a hundred MB, a fifth of a one-second measurement on the 64-channel
    // nets), as the anchors warm up theirs.
    let mut trained = init.clone();
    throughput::Steps::new(&layout).run(&layout, &mut trained, &examples, 256, 2, &mut trainer);
    let bits = format!("{:016x}", fnv(bits, &trained));
    for round in 0..args.rounds {
        let mut infer = |batch: usize| {
            let mut at = 0usize;
            rate(args.seconds, || {
                let n = batch * planes.len();
                if at + n > xs.len() {
                    at = 0;
                }
                throughput::infer_batch(
                    &layout,
                    &init,
                    &weights,
                    &xs[at..at + n],
                    &mut scratch,
                    &mut values,
                    &mut logits,
                );
                at += n;
                batch
            })
        };
        let on = |what: &str| args.only.as_deref().is_none_or(|o| o == what);
        let b1 = if on("b1") { infer(1) } else { 0.0 };
        let b64 = if on("b64") { infer(64) } else { 0.0 };
        let mut params = init.clone();
        let mut losses = (0.0, 0.0);
        let train = if on("train") {
            // One momentum buffer for the whole measurement, as a training loop keeps it.
            let mut steps = throughput::Steps::new(&layout);
            rate(args.seconds, || {
                losses = steps.run(&layout, &mut params, &examples, 256, 1, &mut trainer);
                256
            })
        } else {
            0.0
        };
        println!(
            "{{\"engine\":\"tabula\",\"net\":\"{}\",\"round\":{round},\"supported\":true,\
             \"params\":{},\"infer_b1\":{b1:.1},\"infer_b64\":{b64:.1},\"train_b256\":{train:.2},\
             \"policy_loss\":{:.4},\"value_loss\":{:.4},\"bits\":\"{bits}\"}}",
            spec.name,
            layout.params(),
            losses.0,
            losses.1
        );
    }
    ExitCode::SUCCESS
}
