//! `tabula checkout RUN@I --export model.onnx | weights.safetensors` (docs/network.md,
//! "Export"): tiny MLP and residual networks trained on Connect Four are exported by the
//! binary, and `tests/python/onnx_check.py` runs the ONNX file in ONNX Runtime, the
//! safetensors weights in an independent NumPy forward pass and, for the basic nets where
//! torch is installed, in a PyTorch module loaded by name; each must give tabula's own outputs
//! (from the library's encoder and forward pass) within 1e-5 on a set of positions.
//!
//! The Python side runs in the virtual environment `scripts/python-venv.sh` makes
//! (`target/py-venv`, or `TABULA_PY_VENV`; `make test` runs the script first, and this test
//! runs it when the environment is missing). Without Python or the package index the numeric
//! check is SKIPPED, loudly; the command's own behaviour (formats, errors, no partial files) is
//! tested either way.

use crate::binary;
use crate::python;

use std::path::Path;
use std::process::Command;

use binary::{fails, json, ok, tabula};
use python::python;
use tabula::games::ConnectFour;
use tabula::learners::Network;
use tabula::nn::ValueHead;
use tabula::store::Store;
use tabula::{Game, Turn};

const TOL: f64 = 1e-5;

fn loud_skip(why: &str) {
    eprintln!(
        "\n!!!!!!!!\n!!! SKIPPED: the ONNX Runtime / NumPy check of the export did not run: {why}\n\
         !!! (run scripts/python-venv.sh; `make test` does it)\n!!!!!!!!\n"
    );
}

/// A tiny network run on Connect Four 7x6: 2 iterations, no evaluation.
fn spec(dir: &Path, name: &str, net: &str) -> String {
    let text = format!(
        "name = \"{name}\"\nvariant = \"c4:7x6\"\nseed = 5\niterations = 2\n\
         games_per_iteration = 8\nwindow = 2\n[search]\nsimulations = 8\n\
         [eval]\nwr_p = false\nerrors = false\n[learner]\nkind = \"network\"\n\
         [learner.network]\n{net}batch_size = 16\ntrain_steps = 5\n\
         [learner.network.reference]\nsolver_games = 0\nc4_sets = []\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Decision states of Connect Four: the start and those of a few pseudo-random games.
fn positions(g: &ConnectFour) -> Vec<<ConnectFour as Game>::State> {
    let mut out = Vec::new();
    let mut legal = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..4 {
        let mut s = g.initial_state();
        while let Turn::Player(_) = g.turn(&s) {
            out.push(s);
            g.legal_actions(&s, &mut legal);
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            s = g.apply(&s, legal[(x >> 33) as usize % legal.len()]);
        }
    }
    out.truncate(60);
    out
}

/// tabula's outputs on `positions` from the library (the encoder and the forward pass), as
/// the JSON the Python script reads.
fn cases(db: &Path, run: &str, i: u32) -> serde_json::Value {
    let g = ConnectFour::new(7, 6).unwrap();
    let store = Store::open_read_only(db).unwrap();
    let net: Network<ConnectFour> = tabula::runs::model_at(&g, &store, run, i).unwrap();
    let layout = net.layout();
    let input = layout.input();
    let mut x = vec![0.0f32; input.len()];
    let mut scratch = layout.scratch();
    let ps: Vec<serde_json::Value> = positions(&g)
        .iter()
        .map(|s| {
            let pre = net.infer(s, &[], &mut x, &mut scratch);
            // The value output: tanh in [-1, 1], or the sigmoid's [0, 1] value itself.
            let value = match layout.value_head() {
                ValueHead::Tanh => f64::from(pre).tanh(),
                ValueHead::Sigmoid => 1.0 / (1.0 + (-f64::from(pre)).exp()),
            };
            serde_json::json!({"planes": x, "policy_logits": scratch.logits, "value": value})
        })
        .collect();
    assert!(ps.len() >= 40, "{} positions", ps.len());
    let area = input.len() / input.channels;
    // Connect Four 7x6: two planes of 6 rows and 7 columns.
    assert_eq!((input.channels, area), (2, 42));
    serde_json::json!({"input": [2, 6, 7], "actions": layout.actions(), "positions": ps})
}

/// Runs `tests/python/onnx_check.py` on `cases` (tabula's outputs) and the exported `onnx` and
/// `st` files; returns its report, whose failures it asserts are none, or `None` after a loud
/// skip where the venv cannot be had.
fn onnx_check(
    dir: &Path,
    name: &str,
    cases: &serde_json::Value,
    onnx: &Path,
    st: &Path,
) -> Option<serde_json::Value> {
    let py = match python() {
        Ok(py) => py,
        Err(why) => {
            loud_skip(&why);
            return None;
        }
    };
    let cases_path = dir.join(format!("{name}-cases.json"));
    std::fs::write(&cases_path, cases.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/onnx_check.py");
    let out = Command::new(&py)
        .arg(&script)
        .args([&cases_path, onnx, st])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{name}: onnx_check.py\n{stdout}");
    assert!(
        out.status.success(),
        "{name}: onnx_check.py failed\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["failures"], serde_json::json!([]));
    Some(r)
}

/// Trains `name`, exports it both ways through the binary and, where the venv is there,
/// checks both files against tabula's outputs.
fn export_and_check(dir: &Path, name: &str, net: &str) {
    let db = dir.join(format!("{name}.db"));
    ok(&tabula(
        &db,
        &["run", &spec(dir, name, net), "--threads", "2"],
    ));
    let onnx = dir.join(format!("{name}.onnx"));
    let st = dir.join(format!("{name}.safetensors"));
    let target = format!("{name}@2");
    let o = json(&tabula(
        &db,
        &[
            "checkout",
            &target,
            "--export",
            onnx.to_str().unwrap(),
            "--json",
        ],
    ));
    assert_eq!(o["format"], "onnx");
    assert_eq!(o["opset"], 13);
    assert_eq!(o["learner"], "network");
    assert_eq!(
        o["export_bytes"].as_u64(),
        Some(std::fs::metadata(&onnx).unwrap().len())
    );
    let o = json(&tabula(
        &db,
        &[
            "checkout",
            &target,
            "--export",
            st.to_str().unwrap(),
            "--json",
        ],
    ));
    assert_eq!(o["format"], "safetensors");
    assert!(o["opset"].is_null());
    // The weights alone: 4 bytes a parameter, after the header.
    let bytes = std::fs::read(&st).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(
        (bytes.len() - 8 - n) as u64,
        4 * o["units"].as_u64().unwrap()
    );
    // The text form states the opset and the outputs.
    let text = ok(&tabula(
        &db,
        &["checkout", &target, "--export", onnx.to_str().unwrap()],
    ));
    assert!(
        text.contains("opset 13") && text.contains("policy_logits [N, 7]"),
        "{text}"
    );
    let squash = if net.contains("sigmoid") {
        "sigmoid, in [0, 1]"
    } else {
        "tanh, in [-1, 1]"
    };
    assert!(text.contains(squash), "{text}");

    let Some(r) = onnx_check(dir, name, &cases(&db, name, 2), &onnx, &st) else {
        return;
    };
    assert!(r["positions"].as_u64().unwrap() >= 40);
    // Beyond the basic nets the script's PyTorch module does not go: ONNX Runtime and
    // NumPy only.
    let basic = !["batch_norm", "bottleneck", "valid"]
        .iter()
        .any(|k| net.contains(k));
    let engines: &[&str] = if basic {
        &["onnxruntime", "numpy", "torch"]
    } else {
        &["onnxruntime", "numpy"]
    };
    for &what in engines {
        if what == "torch" && r["torch"].is_null() {
            eprintln!(
                "\n!!!!!!!!\n!!! SKIPPED: torch not installed in the venv: the PyTorch check of \
                 {name} did not run (TABULA_PY_TORCH=1 scripts/python-venv.sh adds it)\n!!!!!!!!\n"
            );
            continue;
        }
        for head in ["policy", "value"] {
            let d = r[what][head].as_f64().unwrap();
            assert!(d <= TOL, "{name} {what} {head}: {d}");
        }
    }
    let meta = &r["metadata"];
    if net.contains("stem = \"valid\"") {
        let arch = meta["arch"].as_str().unwrap_or_default();
        assert!(
            arch.contains("stem valid") && arch.contains("conv_bias"),
            "{arch}"
        );
    }
    assert_eq!(meta["variant"], "c4:7x6");
    assert_eq!(meta["iteration"], "2");
    assert_eq!(meta["name"], name);
}

#[test]
fn exported_mlp_matches_onnx_runtime_numpy_and_torch() {
    let dir = tempfile::tempdir().unwrap();
    export_and_check(
        dir.path(),
        "mlp",
        "arch = \"mlp\"\nhidden = [32, 16]\nlr = [[1, 0.05]]\n",
    );
}

#[test]
fn exported_resnet_matches_onnx_runtime_numpy_and_torch() {
    let dir = tempfile::tempdir().unwrap();
    export_and_check(
        dir.path(),
        "res",
        "arch = \"resnet\"\nblocks = 2\nchannels = 8\noptimizer = \"adam\"\nlr = [[1, 0.003]]\n",
    );
}

/// Liu et al.'s kind of net: bottleneck blocks, batch normalisation (ONNX Runtime and the
/// NumPy forward pass read the running statistics the run trained), AlphaGo Zero's heads;
/// with the sigmoid value head (the graph ends in Sigmoid, and says so).
#[test]
fn exported_batch_norm_bottleneck_net_matches_onnx_runtime() {
    let dir = tempfile::tempdir().unwrap();
    export_and_check(
        dir.path(),
        "bn",
        "arch = \"resnet\"\nblocks = 2\nchannels = 8\nbottleneck = 4\nbatch_norm = true\n\
         head = \"conv\"\nvalue_hidden = 16\nvalue_head = \"sigmoid\"\noptimizer = \"adam\"\n\
         lr = [[1, 0.003]]\n",
    );
}

/// Liu et al.'s net in small: an unpadded stem (Connect Four's 6 x 7 planes, a 4 x 5 trunk:
/// the ONNX stem has pads 0), the convolutions' biases kept before batch normalisation,
/// bottleneck blocks, conv heads; checked in ONNX Runtime and the NumPy forward pass.
#[test]
fn exported_valid_stem_conv_bias_net_matches_onnx_runtime_and_numpy() {
    let dir = tempfile::tempdir().unwrap();
    export_and_check(
        dir.path(),
        "liu",
        "arch = \"resnet\"\nblocks = 2\nchannels = 8\nbottleneck = 4\nbatch_norm = true\n\
         conv_bias = true\nstem = \"valid\"\nhead = \"conv\"\npolicy_channels = 4\n\
         value_hidden = 16\noptimizer = \"adam\"\nlr = [[1, 0.003]]\n",
    );
}

/// The literature spec's network itself (`runs/checkers-liu.toml`: 247,386 trainable values
/// on Liu et al.'s 7 x 7 x 7 input of the last three states), trained one greedy epoch in
/// small, exported through the binary and run in ONNX Runtime and the NumPy forward pass on
/// positions of random games, each encoded with its game's past.
#[test]
fn the_literature_network_matches_onnx_runtime_on_its_history_input() {
    use tabula::games::{AnyGame, Checkers};
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string("runs/checkers-liu.toml").unwrap();
    let cut = text.find("[[stage]]").unwrap();
    let text = text[..cut]
        .replace(
            "games_per_iteration = 15000",
            "games_per_iteration = 4\niterations = 1",
        )
        .replace("retain = 0.04", "retain = 0.5")
        .replace("greedy_games = 300", "greedy_games = 0")
        + "\n[selfplay]\nmover = \"greedy\"\n";
    let spec = dir.path().join("liu.toml");
    std::fs::write(&spec, text).unwrap();
    let db = dir.path().join("liu.db");
    ok(&tabula(
        &db,
        &["run", spec.to_str().unwrap(), "--threads", "2"],
    ));
    let onnx = dir.path().join("liu.onnx");
    let st = dir.path().join("liu.safetensors");
    for f in [&onnx, &st] {
        ok(&tabula(
            &db,
            &[
                "checkout",
                "checkers-liu@1",
                "--export",
                f.to_str().unwrap(),
            ],
        ));
    }
    let g = match "checkers:7x7-6,max_plies=100".parse::<AnyGame>().unwrap() {
        AnyGame::Checkers(g) => g,
        _ => unreachable!(),
    };
    let store = Store::open_read_only(&db).unwrap();
    let net: Network<Checkers> = tabula::runs::model_at(&g, &store, "checkers-liu", 1).unwrap();
    let layout = net.layout();
    assert_eq!(layout.trainable(), 247_386);
    let (mut x, mut scratch) = (vec![0.0f32; layout.input().len()], layout.scratch());
    let (mut ps, mut legal) = (Vec::new(), Vec::new());
    let mut r: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..3 {
        let mut game = vec![g.initial_state()];
        while let (Turn::Player(_), true) = (g.turn(game.last().unwrap()), ps.len() < 60) {
            let (s, past) = game.split_last().unwrap();
            let pre = net.infer(s, past, &mut x, &mut scratch);
            let value = f64::from(pre).tanh();
            ps.push(
                serde_json::json!({"planes": x, "policy_logits": scratch.logits, "value": value}),
            );
            g.legal_actions(s, &mut legal);
            r = r.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let next = g.apply(s, legal[(r >> 33) as usize % legal.len()]);
            game.push(next);
            if game.len() > 25 {
                break;
            }
        }
    }
    assert!(ps.len() >= 40, "{} positions", ps.len());
    let cases = serde_json::json!({"input": [7, 7, 7], "actions": 294, "positions": ps});
    let Some(r) = onnx_check(dir.path(), "liu", &cases, &onnx, &st) else {
        return;
    };
    for what in ["onnxruntime", "numpy"] {
        for head in ["policy", "value"] {
            let d = r[what][head].as_f64().unwrap();
            assert!(d <= TOL, "{what} {head}: {d}");
        }
    }
    assert_eq!(r["metadata"]["variant"], "checkers:7x7-6,max_plies=100");
}

/// The files in `dir` (names), to show that a failed export leaves nothing behind.
fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A table run asked for a network format, the store's own path, a missing directory: clear
/// errors and no file left; a table's rows still go to any other extension; the untrained
/// network (iteration 0) exports.
#[test]
fn export_errors_are_clear_and_leave_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = d.join("t.toml");
    std::fs::write(
        &spec,
        "name = \"t\"\nvariant = \"ewn:3x3x3\"\nseed = 1\niterations = 1\n\
         games_per_iteration = 10\n[search]\nsimulations = 8\n[eval]\nwr_p = false\n",
    )
    .unwrap();
    let db = d.join("s.db");
    ok(&tabula(&db, &["run", spec.to_str().unwrap()]));
    let before = files(d);
    for ext in ["onnx", "safetensors", "ONNX"] {
        let path = d.join(format!("t.{ext}"));
        let err = fails(&tabula(
            &db,
            &["checkout", "t@1", "--export", path.to_str().unwrap()],
        ));
        assert!(
            err.contains("tabular-az") && err.contains(".onnx and .safetensors"),
            "{err}"
        );
        assert_eq!(files(d), before, "nothing written for .{ext}");
    }
    // The store itself, however it is spelled: refused, and still intact.
    let store_len = std::fs::metadata(&db).unwrap().len();
    let other_spelling = d.join(".").join("s.db");
    for path in [&db, &other_spelling] {
        let err = fails(&tabula(
            &db,
            &["checkout", "t@1", "--export", path.to_str().unwrap()],
        ));
        assert!(err.contains("the store being read"), "{err}");
    }
    assert_eq!(std::fs::metadata(&db).unwrap().len(), store_len);
    let c = json(&tabula(&db, &["checkout", "t@1", "--json"]));
    assert!(c["format"].is_null());
    // A table's rows: any other extension, as before.
    let rows = d.join("rows.jsonl");
    let c = json(&tabula(
        &db,
        &[
            "checkout",
            "t@1",
            "--export",
            rows.to_str().unwrap(),
            "--json",
        ],
    ));
    assert_eq!(c["format"], "rows");
    let text = std::fs::read_to_string(&rows).unwrap();
    assert!(text.lines().next().unwrap().contains("\"header\""));
    assert_eq!(
        text.lines().count() as u64,
        1 + c["entries"].as_u64().unwrap()
    );

    // A network run: an export into a missing directory fails naming it; the untrained
    // network exports.
    let net = d.join("n.toml");
    std::fs::write(
        &net,
        "name = \"n\"\nvariant = \"ewn:3x3x3\"\nseed = 1\niterations = 1\n\
         games_per_iteration = 10\n[search]\nsimulations = 8\n[eval]\nwr_p = false\n\
         [learner]\nkind = \"network\"\n[learner.network]\nhidden = [8]\nbatch_size = 8\n\
         train_steps = 2\n",
    )
    .unwrap();
    ok(&tabula(&db, &["run", net.to_str().unwrap()]));
    let before = files(d);
    let missing = d.join("no-such-dir").join("m.onnx");
    let err = fails(&tabula(
        &db,
        &["checkout", "n@1", "--export", missing.to_str().unwrap()],
    ));
    assert!(err.contains("no-such-dir"), "{err}");
    assert_eq!(files(d), before);
    let err = fails(&tabula(
        &db,
        &["checkout", "n@1", "--export", d.to_str().unwrap()],
    ));
    assert!(err.contains("directory"), "{err}");
    let rows = d.join("n.jsonl");
    let err = fails(&tabula(
        &db,
        &["checkout", "n@1", "--export", rows.to_str().unwrap()],
    ));
    assert!(err.contains("no rows") && err.contains(".onnx"), "{err}");
    assert_eq!(files(d), before);
    let untrained = d.join("n0.safetensors");
    let c = json(&tabula(
        &db,
        &[
            "checkout",
            "n@0",
            "--export",
            untrained.to_str().unwrap(),
            "--json",
        ],
    ));
    assert_eq!(c["format"], "safetensors");
    assert!(std::fs::metadata(&untrained).unwrap().len() > 4 * 8);
    let mut after = before.clone();
    after.push("n0.safetensors".into());
    after.sort();
    assert_eq!(files(d), after, "no temporary file left");
}

/// MuZero's export (issue 50; docs/muzero.md, "Checkpoints and export"): a tiny Stochastic
/// MuZero run (all six networks) exported by the binary, one ONNX file per network; ONNX
/// Runtime runs each file (`tests/python/onnx_muzero_check.py`) on inputs spread over
/// [-2, 3] and must give tabula's own outputs within 1e-5: the logits, the value squashed by
/// tanh, and for the dynamics the reward unsquashed (the value head it is trained as).
#[test]
fn exported_muzero_networks_match_onnx_runtime() {
    use tabula::games::Ewn;
    use tabula::learners::MuZero;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mz.db");
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("runs/stochastic-muzero-tiny.toml");
    ok(&tabula(
        &db,
        &[
            "run",
            spec.to_str().unwrap(),
            "--set",
            "iterations=2",
            "--threads",
            "2",
        ],
    ));
    let path = dir.path().join("mz.onnx");
    let o = json(&tabula(
        &db,
        &[
            "checkout",
            "stochastic-muzero-tiny@2",
            "--export",
            path.to_str().unwrap(),
            "--json",
        ],
    ));
    assert_eq!(o["format"], "onnx");
    let g = Ewn::new(3, 3, 3).unwrap();
    let store = Store::open_read_only(&db).unwrap();
    let m: MuZero<Ewn> = tabula::runs::model_at(&g, &store, "stochastic-muzero-tiny", 2).unwrap();
    let mut graphs = Vec::new();
    for (k, (name, len)) in m.exported_inputs().into_iter().enumerate() {
        let file = dir.path().join(format!("mz.{name}.onnx"));
        assert!(file.exists(), "{}", file.display());
        let cases: Vec<serde_json::Value> = (0..8u32)
            .map(|r| {
                let x: Vec<f32> = (0..len as u32)
                    .map(|i| ((i * 7919 + r * 104_729) % 1000) as f32 / 200.0 - 2.0)
                    .collect();
                let (logits, value) = m.run_exported(k, &x).unwrap();
                serde_json::json!({"x": x, "logits": logits, "value": value})
            })
            .collect();
        graphs.push(serde_json::json!({"name": name, "file": file, "cases": cases}));
    }
    assert_eq!(graphs.len(), 6);
    let py = match python() {
        Ok(py) => py,
        Err(why) => {
            loud_skip(&why);
            return;
        }
    };
    let cases_path = dir.path().join("mz-cases.json");
    std::fs::write(
        &cases_path,
        serde_json::json!({"graphs": graphs}).to_string(),
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/onnx_muzero_check.py");
    let out = Command::new(&py)
        .arg(&script)
        .arg(&cases_path)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "onnx_muzero_check.py failed\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["failures"], serde_json::json!([]));
    assert_eq!(r["networks"].as_object().unwrap().len(), 6, "{r}");
}
