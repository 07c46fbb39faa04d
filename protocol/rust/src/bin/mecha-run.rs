//! One agent run's conversation with a sidecar, timed: what a harness does
//! between starting a run and its end, without the model.
//!
//!     mecha-run [--pace-ms N] [--learning-dir DIR] PROGRAM [ARG ...]
//!
//! Spawns PROGRAM ARG… as the sidecar, then: `initialize`, the rules block,
//! a pause of N ms (the run's first model call; 0: back to back), the live
//! affect and the interventions over a short transcript, each asked a
//! second time (`*_again_ms`: the same answer from a server that is warm, the
//! floor the first one is measured against), `shutdown` and `exit`. Prints
//! one JSON object: each answer's wall time in ms, and the total. Learning that is off is printed as `why_off`, and the run still
//! ends with exit code 0: the harness's side fails open.

use std::time::{Duration, Instant};

use mecha_sidecar_client::{Config, Learning};
use serde_json::{json, Value};

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut pace = Duration::ZERO;
    let mut options = json!({});
    while let Some(flag) = args.first().cloned() {
        match flag.as_str() {
            "--pace-ms" => {
                pace = Duration::from_millis(args.get(1).and_then(|v| v.parse().ok()).expect("--pace-ms N"));
                args.drain(..2);
            }
            "--learning-dir" => {
                options["learningDir"] = json!(args.get(1).expect("--learning-dir DIR"));
                args.drain(..2);
            }
            _ => break,
        }
    }
    if args.is_empty() {
        eprintln!("usage: mecha-run [--pace-ms N] [--learning-dir DIR] PROGRAM [ARG ...]");
        std::process::exit(2);
    }
    let mut config = Config::new(args.remove(0));
    config.args = args;
    config.initialization_options = options;
    config.echo_notes = false;

    let run = Instant::now();
    let mut out = serde_json::Map::new();
    let mut learning = Learning::start(config);
    out.insert("initialize_ms".into(), json!(ms(run)));

    let t = Instant::now();
    let block = learning.rules_block(None, None);
    out.insert("rules_block_ms".into(), json!(ms(t)));
    out.insert("rule_ids".into(), json!(block.map(|b| b.rule_ids.len())));
    std::thread::sleep(pace);

    let messages: Value = json!([
        {"role": "user", "content": "Rename load_config to read_config."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": "git push"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                                      "content": [{"type": "text", "text": "Denied by the user: never push without asking"}]}]},
        {"role": "assistant", "content": "Understood."}
    ]);
    let t = Instant::now();
    let affect: Option<Value> = learning.call("mecha/liveAffect", &json!({"session_id": "run-1", "messages": messages}));
    out.insert("live_affect_ms".into(), json!(ms(t)));
    out.insert("affect".into(), affect.and_then(|a| a.get("affect").cloned()).unwrap_or(Value::Null));

    let t = Instant::now();
    let found: Option<Value> = learning.call("mecha/extractInterventions", &json!({"messages": messages}));
    out.insert("interventions_ms".into(), json!(ms(t)));
    out.insert(
        "interventions".into(),
        json!(found.and_then(|f| f.get("interventions").and_then(Value::as_array).map(Vec::len))),
    );

    let t = Instant::now();
    let _: Option<Value> = learning.call("mecha/liveAffect", &json!({"session_id": "run-1", "messages": messages}));
    out.insert("live_affect_again_ms".into(), json!(ms(t)));
    let t = Instant::now();
    let _: Option<Value> = learning.call("mecha/extractInterventions", &json!({"messages": messages}));
    out.insert("interventions_again_ms".into(), json!(ms(t)));

    out.insert("why_off".into(), json!(learning.why_off()));
    let t = Instant::now();
    let notes = learning.finish();
    out.insert("shutdown_ms".into(), json!(ms(t)));
    out.insert("total_ms".into(), json!(ms(run) - pace.as_secs_f64() * 1000.0));
    out.insert("notes".into(), json!(notes));
    println!("{}", Value::Object(out));
}
