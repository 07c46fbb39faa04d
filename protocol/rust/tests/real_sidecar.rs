//! The client against a real sidecar process: a normal run, and every way
//! the sidecar can fail a run — missing, refusing to start, killed in the
//! middle of a request, stopped (hung) — each of which the run survives.
//!
//! `MECHA_TEST_PYTHON` names the interpreter that has mecha-sidecar
//! installed (the pytest wrapper, tests/wire/test_rust_client.py, sets
//! it); each test makes its own store under `MECHA_TEST_TMP`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use mecha_sidecar_client::wire::{LiveAffectParams, Message};
use mecha_sidecar_client::{Config, Learning, Sidecar, SidecarError};
use serde_json::{json, Value};

fn python() -> String {
    std::env::var("MECHA_TEST_PYTHON").expect("MECHA_TEST_PYTHON: the interpreter mecha-sidecar is installed in")
}

/// A store with one rule of the person's own, in a folder of its own.
fn store(name: &str) -> PathBuf {
    let base = std::env::var("MECHA_TEST_TMP").map(PathBuf::from).unwrap_or_else(|_| std::env::temp_dir());
    let root = base.join(format!("rust-{name}-{}", std::process::id())).join("learning");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("rules")).unwrap();
    std::fs::write(root.join("rules/behavior.user.toml"), "[[rules]]\ntext = \"Ask before pushing to a remote\"\n")
        .unwrap();
    root
}

fn config(name: &str) -> Config {
    let mut config = Config::new(python());
    config.args = vec!["-m".into(), "mecha.sidecar".into()];
    config.initialization_options = json!({"learningDir": store(name)});
    config.echo_notes = false;
    config.start_deadline = Duration::from_secs(60);
    config
}

fn signal(pid: u32, sig: &str) {
    let done = Command::new("kill").args([sig, &pid.to_string()]).status().unwrap();
    assert!(done.success(), "kill {sig} {pid}");
}

/// Stop the process, and wait until every thread of it is stopped: a stop
/// is delivered to each thread as it next runs, and a thread running when
/// the signal is sent could otherwise still answer a request sent next.
fn stop(pid: u32) {
    signal(pid, "-STOP");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
        let all_stopped = tasks.filter_map(Result::ok).all(|task| {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            // The state follows the command name in parentheses.
            stat.rsplit_once(") ").map(|(_, rest)| rest.starts_with('T')).unwrap_or(true)
        });
        if all_stopped {
            return;
        }
        assert!(Instant::now() < until, "{pid} did not stop");
        thread::sleep(Duration::from_millis(1));
    }
}

fn transcript() -> Vec<Message> {
    serde_json::from_value(json!([
        {"role": "user", "content": "Rename load_config."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": "git push"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                                      "content": [{"type": "text", "text": "Denied by the user: never push without asking"}]}]},
        {"role": "assistant", "content": "Understood."}
    ]))
    .unwrap()
}

#[test]
fn a_normal_run_gets_its_rules_and_ends_cleanly() {
    let mut learning = Learning::start(config("normal"));
    assert_eq!(learning.why_off(), None, "{:?}", learning.notes());
    let block = learning.rules_block(None, None).expect("a rules block");
    assert!(block.block.unwrap_or_default().contains("Ask before pushing to a remote"));
    assert_eq!(block.domains, vec!["behavior".to_string(), "writing".to_string()]);
    let params = LiveAffectParams { session_id: "run-1".into(), messages: transcript(), stats: None, run_started_at: None };
    assert!(learning.live_affect(&params).is_some());
    let found: Value = learning.call("mecha/extractInterventions", &json!({"messages": transcript()})).unwrap();
    assert_eq!(found["interventions"][0]["trigger"], "denial");
    assert_eq!(found["interventions"][0]["text"], "never push without asking");
    let notes = learning.finish();
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn an_unknown_option_is_reported_with_the_key_meant() {
    let mut config = config("ignored");
    config.initialization_options["learning_dir"] = json!("/nowhere");
    let learning = Learning::start(config);
    assert_eq!(learning.why_off(), None);
    assert!(learning.notes().iter().any(|n| n.contains("`learning_dir` (did you mean `learningDir`?)")), "{:?}", learning.notes());
    learning.finish();
}

#[test]
fn a_missing_sidecar_leaves_the_run_without_rules_and_says_why() {
    let mut learning = Learning::start(Config { echo_notes: false, ..Config::new("/nonexistent/mecha-sidecar") });
    let why = learning.why_off().expect("learning is off").to_string();
    assert!(why.contains("`/nonexistent/mecha-sidecar` could not be started"), "{why}");
    assert!(learning.rules_block(None, None).is_none());
    assert_eq!(learning.finish(), vec![why]);
}

#[test]
fn a_sidecar_that_will_not_start_is_named_with_its_last_words() {
    let mut config = config("wont-start");
    config.args = vec!["-c".into(), "import sys; sys.stderr.write('store is read-only\\n'); sys.exit(3)".into()];
    let learning = Learning::start(config);
    let why = learning.why_off().expect("learning is off");
    assert!(why.contains("exited with code 3 during initialize"), "{why}");
    assert!(why.contains("store is read-only"), "{why}");
}

#[test]
fn a_sidecar_killed_mid_request_is_reported_dead_not_waited_for() {
    let (mut sidecar, _) = Sidecar::spawn(&config("killed")).expect("spawned");
    let pid = sidecar.pid();
    stop(pid); // the request below is in flight when the kill comes
    let killer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        signal(pid, "-KILL");
    });
    let started = Instant::now();
    let got: Result<Value, SidecarError> = sidecar.request("mecha/rulesPromptBlock", &json!({}), Duration::from_secs(30));
    killer.join().unwrap();
    let error = got.expect_err("no answer from a killed process");
    assert!(started.elapsed() < Duration::from_secs(10), "waited {:?}", started.elapsed());
    assert!(matches!(error, SidecarError::Died { .. }), "{error:?}");
    eprintln!("killed: {error}");
    assert!(error.to_string().contains("was killed"), "{error}");
    assert!(error.to_string().contains("during mecha/rulesPromptBlock"), "{error}");
}

#[test]
fn a_stopped_sidecar_costs_a_deadline_its_late_reply_is_dropped_and_a_second_miss_turns_learning_off() {
    let mut config = config("stopped");
    config.request_deadline = Duration::from_millis(1000); // a busy machine answers well inside it
    let mut learning = Learning::start(config);
    assert!(learning.rules_block(None, None).is_some(), "{:?}", learning.notes());
    let pid = learning.sidecar().unwrap().pid();

    stop(pid);
    let started = Instant::now();
    assert!(learning.rules_block(None, None).is_none());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(learning.notes().last().unwrap().contains("got no answer within 1000 ms; it was cancelled"), "{:?}", learning.notes());
    assert_eq!(learning.why_off(), None, "one missed deadline keeps the sidecar");

    signal(pid, "-CONT");
    let block = learning.rules_block(Some("writing"), None).expect("answered again once it runs");
    assert_eq!(block.domains, vec!["behavior".to_string(), "writing".to_string()]);
    assert_eq!(learning.sidecar().unwrap().dropped_late, 1, "the late reply was dropped, not taken for this one");

    stop(pid);
    assert!(learning.rules_block(None, None).is_none());
    assert!(learning.rules_block(None, None).is_none());
    let why = learning.why_off().expect("two misses in a row turn learning off").to_string();
    assert!(why.contains("no answer within 1000 ms"), "{why}");
    assert!(learning.sidecar().is_none());
    // Killed, not left behind stopped: the pid is gone.
    let alive = Command::new("kill").args(["-0", &pid.to_string()]).stderr(Stdio::null()).status().unwrap().success();
    assert!(!alive, "the hung sidecar {pid} was left running");
    learning.finish();
}
