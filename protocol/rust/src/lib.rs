//! The harness's side of the mecha-sidecar wire.
//!
//! [`wire`] holds the wire types, generated from the JSON Schema the server
//! is built from (`protocol/rust/generate.py`; a test fails when they are
//! stale). [`client`] spawns one sidecar per agent run, frames requests,
//! gives each a deadline, drops the late replies of requests it gave up on,
//! and — in [`client::Learning`] — fails open: when the sidecar is missing,
//! will not start, dies or hangs, the run goes on without learned rules and
//! says why.
//!
//! A run, whole (the same lines are in `protocol/README.md`; a test keeps
//! them equal):
//!
//! ```no_run
//! use mecha_sidecar_client::wire::{Message, SessionEndedParams, TaintCheckpoint, TaintInput};
//! use mecha_sidecar_client::{Config, Learning};
//! use serde_json::json;
//! # fn run_the_model(_: &str, _: &mut Vec<Message>) {}
//!
//! let mut config = Config::new("mecha-sidecar"); // on PATH, or its full path
//! config.initialization_options = json!({"learningDir": "/home/pat/.mecha/learning"});
//! let mut learning = Learning::start(config); // never fails; learning may be off
//!
//! // Before the run's first model call: the learned rules, or none.
//! let rules = learning.rules_block(None, Some("/home/pat/src/app"));
//! let learned = rules.as_ref().and_then(|r| r.block.clone()).unwrap_or_default();
//! let system_prompt = format!("You are a careful coding agent.\n\n{learned}");
//!
//! let mut messages: Vec<Message> = Vec::new();
//! run_the_model(&system_prompt, &mut messages);
//!
//! // At the end: hand the transcript over; a background pass learns from it.
//! let clean = TaintCheckpoint { at: 0, reset: None, taint: TaintInput { private: None, untrusted: None } };
//! learning.session_ended(&SessionEndedParams {
//!     session_id: "run-0142".into(),
//!     messages,
//!     taint_timeline: Some(vec![clean]), // what entered the context, and when
//!     interactive: None,
//!     project: Some("/home/pat/src/app".into()),
//!     rule_ids: rules.map(|r| r.rule_ids), // the rules this run carried
//! });
//! for note in learning.finish() {
//!     eprintln!("mecha: {note}"); // why learning was off, if it was
//! }
//! ```

pub mod client;
pub mod wire;

pub use client::{Config, Learning, Sidecar, SidecarError};
