//! One sidecar per agent run, over its stdin and stdout.
//!
//! [`Sidecar`] is the plain client: spawn, `initialize`, requests with a
//! deadline each, `shutdown` and `exit`. A reader thread parses frames off
//! the child's stdout and hands each message over a channel, so a request
//! waits on the channel with a timeout and never blocks on a pipe. A
//! request that misses its deadline is given up: its id is remembered, a
//! `$/cancelRequest` is sent, and the reply, if it comes later, is dropped
//! where it arrives (counted in [`Sidecar::dropped_late`]) instead of being
//! taken for the answer to a later request. The child's stderr is drained
//! by a second thread, and its last few KiB are kept to say why it died.
//!
//! [`Learning`] is what a harness holds for a run, and it fails open: a
//! sidecar that is missing, will not start, dies or hangs costs the run its
//! learned rules, never the run. Every call answers `Option`; `None` means
//! "go on without", and [`Learning::why_off`] / [`Learning::notes`] say why
//! (each note is also written to the harness's stderr). One missed deadline
//! keeps the sidecar (a slow answer is dropped, the next call may be fine);
//! two in a row, or a dead process, turn learning off for the rest of the
//! run, and the process is killed rather than left behind.

use std::collections::HashSet;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::wire::{
    methods, InitializeResult, LiveAffectParams, RulesPromptBlockParams, RulesPromptBlockResult, SessionEndedParams,
    SessionEndedResult,
};

/// How much of the child's stderr is kept to explain a death.
const STDERR_TAIL: usize = 4096;
/// A frame larger than this is the server's limit too: anything over it is
/// no frame this client can trust.
const MAX_FRAME: usize = 64 << 20;
/// Missed deadlines in a row after which a hung sidecar is given up for the run.
const TIMEOUTS_BEFORE_GIVING_UP: u32 = 2;

/// How to start the sidecar, and how long to wait for it.
#[derive(Debug, Clone)]
pub struct Config {
    /// The program: `mecha-sidecar`, or a Python interpreter with `args`
    /// `["-m", "mecha.sidecar"]`.
    pub program: String,
    pub args: Vec<String>,
    /// Extra environment for the child.
    pub envs: Vec<(String, String)>,
    /// `initializationOptions`, e.g. `{"learningDir": "…"}`.
    pub initialization_options: Value,
    /// For `initialize`: the process start and the first answer.
    pub start_deadline: Duration,
    /// For every other request.
    pub request_deadline: Duration,
    /// For `shutdown` and the exit after it; the process is killed after.
    pub shutdown_deadline: Duration,
    /// Write each note [`Learning`] makes to this process's stderr.
    pub echo_notes: bool,
}

impl Config {
    pub fn new(program: impl Into<String>) -> Config {
        Config {
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
            initialization_options: json!({}),
            start_deadline: Duration::from_secs(10),
            request_deadline: Duration::from_secs(2),
            shutdown_deadline: Duration::from_secs(2),
            echo_notes: true,
        }
    }
}

/// Why a call got no answer.
#[derive(Debug)]
pub enum SidecarError {
    /// The program could not be run at all (not found, not executable).
    Missing { program: String, error: io::Error },
    /// The process ended (or closed its output) before answering.
    /// `output` says how its output ended (`end of output`, or what was
    /// wrong with a frame).
    Died { during: String, status: Option<ExitStatus>, stderr: String, output: String },
    /// No answer within the deadline; the request was given up and cancelled.
    TimedOut { method: String, after: Duration },
    /// The server answered with a JSON-RPC error.
    Rpc { method: String, code: i64, message: String },
    /// An answer this client cannot read.
    Protocol(String),
}

impl SidecarError {
    /// Whether the sidecar can still be used after this error.
    pub fn is_fatal(&self) -> bool {
        matches!(self, SidecarError::Missing { .. } | SidecarError::Died { .. } | SidecarError::Protocol(_))
    }
}

impl fmt::Display for SidecarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SidecarError::Missing { program, error } => {
                write!(f, "the sidecar `{program}` could not be started ({error}); install mecha-sidecar or set its path")
            }
            SidecarError::Died { during, status, stderr, output } => {
                let how = match status {
                    Some(s) => match s.code() {
                        Some(code) => format!("exited with code {code}"),
                        None => format!("was killed ({s})"),
                    },
                    None => format!("stopped answering ({output})"),
                };
                let last = stderr.trim().lines().last().unwrap_or("");
                if last.is_empty() {
                    write!(f, "the sidecar {how} during {during}")
                } else {
                    write!(f, "the sidecar {how} during {during}; its last words: {last}")
                }
            }
            SidecarError::TimedOut { method, after } => {
                write!(f, "{method} got no answer within {} ms; it was cancelled", after.as_millis())
            }
            SidecarError::Rpc { method, code, message } => write!(f, "{method} failed ({code}): {message}"),
            SidecarError::Protocol(text) => write!(f, "the sidecar's answer could not be read: {text}"),
        }
    }
}

impl std::error::Error for SidecarError {}

enum Incoming {
    Message(Value),
    /// The output ended, or stopped being frames (the reason).
    Closed(String),
}

/// A running sidecar and the conversation with it.
pub struct Sidecar {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Incoming>,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    next_id: i64,
    given_up: HashSet<i64>,
    closed: bool,
    /// How the output ended, once it has.
    output: String,
    /// Late replies to requests this client had given up on, dropped.
    pub dropped_late: usize,
    /// Notifications the server sent (`mecha/jobFinished`), oldest first.
    pub notifications: Vec<Value>,
}

impl Sidecar {
    /// Start the process and `initialize` it within `config.start_deadline`.
    pub fn spawn(config: &Config) -> Result<(Sidecar, InitializeResult), SidecarError> {
        let mut command = Command::new(&config.program);
        command.args(&config.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (key, value) in &config.envs {
            command.env(key, value);
        }
        let mut child = command
            .spawn()
            .map_err(|error| SidecarError::Missing { program: config.program.clone(), error })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, incoming) = mpsc::channel();
        thread::spawn(move || read_frames(stdout, tx));
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr_tail);
        thread::spawn(move || drain(stderr, tail));
        let mut sidecar = Sidecar {
            stdin: child.stdin.take(),
            child,
            incoming,
            stderr_tail,
            next_id: 0,
            given_up: HashSet::new(),
            closed: false,
            output: "its input was closed".to_string(),
            dropped_late: 0,
            notifications: Vec::new(),
        };
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "mecha-sidecar-client", "version": env!("CARGO_PKG_VERSION")},
            "initializationOptions": config.initialization_options,
        });
        let init: InitializeResult = sidecar.request(methods::INITIALIZE, &params, config.start_deadline)?;
        sidecar.notify(methods::INITIALIZED, &json!({}))?;
        Ok((sidecar, init))
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// One request, answered within `deadline` or given up.
    pub fn request<R: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &impl Serialize,
        deadline: Duration,
    ) -> Result<R, SidecarError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}), method)?;
        let result = self.wait_for(id, method, deadline)?;
        serde_json::from_value(result).map_err(|e| SidecarError::Protocol(format!("{method}'s result: {e}")))
    }

    /// A notification: nothing answers it.
    pub fn notify(&mut self, method: &str, params: &impl Serialize) -> Result<(), SidecarError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}), method)
    }

    /// `shutdown`, then `exit`, then the process's end; killed if it does
    /// not end within `deadline`.
    pub fn shutdown(mut self, deadline: Duration) -> Result<ExitStatus, SidecarError> {
        let answered: Result<Value, SidecarError> = self.request(methods::SHUTDOWN, &Value::Null, deadline);
        if let Err(error) = answered {
            self.kill();
            return Err(error);
        }
        self.notify(methods::EXIT, &Value::Null)?;
        self.stdin.take();
        let until = Instant::now() + deadline;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(2)),
                _ => {
                    self.kill();
                    return Err(SidecarError::TimedOut { method: methods::EXIT.to_string(), after: deadline });
                }
            }
        }
    }

    /// End the process now (a hung or unwanted sidecar).
    pub fn kill(&mut self) {
        self.stdin.take();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn send(&mut self, message: &Value, during: &str) -> Result<(), SidecarError> {
        let body = serde_json::to_vec(message).map_err(|e| SidecarError::Protocol(e.to_string()))?;
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin
                .write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
                .and_then(|_| stdin.write_all(&body))
                .and_then(|_| stdin.flush()),
            None => Err(io::Error::new(io::ErrorKind::BrokenPipe, "stdin closed")),
        };
        written.map_err(|_| self.died(during))
    }

    fn wait_for(&mut self, id: i64, method: &str, deadline: Duration) -> Result<Value, SidecarError> {
        if self.closed {
            return Err(self.died(method));
        }
        let until = Instant::now() + deadline;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.incoming.recv_timeout(left) {
                Ok(Incoming::Message(message)) => {
                    if message.get("method").is_some() {
                        self.notifications.push(message);
                        continue;
                    }
                    match message.get("id").and_then(Value::as_i64) {
                        Some(got) if got == id => {
                            if let Some(error) = message.get("error") {
                                return Err(SidecarError::Rpc {
                                    method: method.to_string(),
                                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                                    message: error.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
                                });
                            }
                            return Ok(message.get("result").cloned().unwrap_or(Value::Null));
                        }
                        Some(got) if self.given_up.remove(&got) => self.dropped_late += 1,
                        _ => {} // an error about a frame (`"id": null`): nothing this client sent whole
                    }
                }
                Ok(Incoming::Closed(reason)) => {
                    self.output = reason;
                    return Err(self.died(method));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.died(method));
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.given_up.insert(id);
                    let _ = self.notify(methods::CANCEL_REQUEST, &json!({ "id": id }));
                    return Err(SidecarError::TimedOut { method: method.to_string(), after: deadline });
                }
            }
        }
    }

    /// What to say about a process that stopped answering for good.
    fn died(&mut self, during: &str) -> SidecarError {
        self.closed = true;
        // Its output closed: give it a moment to be reaped, so the status
        // (an exit code, a signal) can be told.
        let until = Instant::now() + Duration::from_millis(500);
        let mut status = None;
        while Instant::now() < until {
            if let Ok(Some(s)) = self.child.try_wait() {
                status = Some(s);
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
        thread::sleep(Duration::from_millis(20)); // the stderr reader's last chunk
        let stderr = String::from_utf8_lossy(&self.stderr_tail.lock().map(|t| t.clone()).unwrap_or_default()).into_owned();
        SidecarError::Died { during: during.to_string(), status, stderr, output: self.output.clone() }
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        // Never leave a sidecar behind the run that started it.
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

fn read_frames(stdout: impl Read, tx: mpsc::Sender<Incoming>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let reason = match read_frame(&mut reader) {
            Ok(Some(body)) => match serde_json::from_slice::<Value>(&body) {
                Ok(message) => {
                    if tx.send(Incoming::Message(message)).is_err() {
                        return;
                    }
                    continue;
                }
                Err(e) => format!("a frame that is not JSON: {e}"),
            },
            Ok(None) => "end of output".to_string(),
            Err(e) => e.to_string(),
        };
        let _ = tx.send(Incoming::Closed(reason));
        return;
    }
}

/// One frame's body; `None` at the end of the output between frames.
fn read_frame(reader: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return if length.is_none() { Ok(None) } else { Err(io::ErrorKind::UnexpectedEof.into()) };
        }
        let header = line.trim_end();
        if header.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok();
            }
        }
    }
    let n = length.unwrap_or(0);
    if n > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a frame of {n} bytes")));
    }
    let mut body = vec![0; n];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}

fn drain(mut stderr: impl Read, tail: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut chunk) {
        if n == 0 {
            return;
        }
        if let Ok(mut kept) = tail.lock() {
            kept.extend_from_slice(&chunk[..n]);
            let excess = kept.len().saturating_sub(STDERR_TAIL);
            kept.drain(..excess);
        }
    }
}

/// A run's learning: the sidecar if it works, and the run without it if not.
pub struct Learning {
    sidecar: Option<Sidecar>,
    config: Config,
    why_off: Option<String>,
    notes: Vec<String>,
    timeouts_in_a_row: u32,
}

impl Learning {
    /// Start the sidecar for this run. Never fails: a sidecar that cannot be
    /// started leaves learning off, and says why.
    pub fn start(config: Config) -> Learning {
        let mut learning =
            Learning { sidecar: None, config, why_off: None, notes: Vec::new(), timeouts_in_a_row: 0 };
        match Sidecar::spawn(&learning.config) {
            Ok((sidecar, init)) => {
                learning.sidecar = Some(sidecar);
                for ignored in &init.ignored_options {
                    let meant = ignored.meant.as_deref().map(|m| format!(" (did you mean `{m}`?)")).unwrap_or_default();
                    learning.note(format!("the sidecar ignored the option `{}`{meant}", ignored.key));
                }
            }
            Err(error) => learning.turn_off(&error),
        }
        learning
    }

    /// Why the run goes on without learning; `None` while it has it.
    pub fn why_off(&self) -> Option<&str> {
        self.why_off.as_deref()
    }

    /// Everything this run's learning had to say, oldest first.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The running sidecar, if any (to send what the helpers below do not).
    pub fn sidecar(&mut self) -> Option<&mut Sidecar> {
        self.sidecar.as_mut()
    }

    /// Any request, failing open: `None` when there is no answer, with the
    /// reason in `notes`.
    pub fn call<R: DeserializeOwned>(&mut self, method: &str, params: &impl Serialize) -> Option<R> {
        let deadline = self.config.request_deadline;
        let sidecar = self.sidecar.as_mut()?;
        match sidecar.request(method, params, deadline) {
            Ok(result) => {
                self.timeouts_in_a_row = 0;
                Some(result)
            }
            Err(error @ SidecarError::TimedOut { .. }) => {
                self.timeouts_in_a_row += 1;
                if self.timeouts_in_a_row >= TIMEOUTS_BEFORE_GIVING_UP {
                    self.turn_off(&error);
                } else {
                    self.note(format!("{error}; the run goes on without it"));
                }
                None
            }
            Err(error) if error.is_fatal() => {
                self.turn_off(&error);
                None
            }
            Err(error) => {
                self.note(format!("{error}; the run goes on without it"));
                None
            }
        }
    }

    /// The learned rules block for the system prompt; `None`: none this run.
    pub fn rules_block(&mut self, domain: Option<&str>, project: Option<&str>) -> Option<RulesPromptBlockResult> {
        let params = RulesPromptBlockParams { domain: domain.map(str::to_string), project: project.map(str::to_string) };
        self.call(methods::RULES_PROMPT_BLOCK, &params)
    }

    /// The run's affect label so far.
    pub fn live_affect(&mut self, params: &LiveAffectParams) -> Option<String> {
        self.call::<crate::wire::LiveAffectResult>(methods::LIVE_AFFECT, params).map(|r| r.affect)
    }

    /// Hand the finished transcript over; the sidecar queues a reflect pass.
    pub fn session_ended(&mut self, params: &SessionEndedParams) -> Option<SessionEndedResult> {
        self.call(methods::SESSION_ENDED, params)
    }

    /// End the sidecar: `shutdown` and `exit`, or a kill when it will not.
    pub fn finish(mut self) -> Vec<String> {
        if let Some(sidecar) = self.sidecar.take() {
            match sidecar.shutdown(self.config.shutdown_deadline) {
                Ok(status) if status.success() => {}
                Ok(status) => self.note(format!("the sidecar ended with {status}")),
                Err(error) => self.note(format!("the sidecar did not shut down cleanly: {error}")),
            }
        }
        self.notes
    }

    fn turn_off(&mut self, error: &SidecarError) {
        if let Some(mut sidecar) = self.sidecar.take() {
            sidecar.kill();
        }
        let why = format!("learning is off for the rest of this run: {error}");
        self.why_off = Some(why.clone());
        self.note(why);
    }

    fn note(&mut self, text: String) {
        if self.config.echo_notes {
            eprintln!("mecha: {text}");
        }
        self.notes.push(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn frames(bytes: &[u8]) -> Vec<io::Result<Option<Vec<u8>>>> {
        let mut reader = BufReader::new(Cursor::new(bytes.to_vec()));
        let mut out = Vec::new();
        loop {
            let next = read_frame(&mut reader);
            let done = !matches!(next, Ok(Some(_)));
            out.push(next);
            if done {
                return out;
            }
        }
    }

    #[test]
    fn frames_are_read_by_their_byte_count_with_any_header_case_and_extra_headers() {
        let got = frames(b"Content-Length: 2\r\n\r\n{}content-length: 8\r\nContent-Type: x\r\n\r\n[\"\xc3\xa9ab\"]");
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"{}"[..]));
        assert_eq!(got[1].as_ref().unwrap().as_deref(), Some("[\"\u{e9}ab\"]".as_bytes()));
        assert!(matches!(got[2], Ok(None)), "the end between frames is the end");
    }

    #[test]
    fn an_output_that_stops_inside_a_frame_is_an_error_not_an_end() {
        let got = frames(b"Content-Length: 10\r\n\r\n{\"a\"");
        assert!(got[0].is_err());
        let got = frames(b"Content-Length: 10\r\n");
        assert!(got[0].is_err());
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_before_it_is_read() {
        let header = format!("Content-Length: {}\r\n\r\n", MAX_FRAME + 1);
        assert!(frames(header.as_bytes())[0].is_err());
    }

    #[test]
    fn only_dead_or_unreadable_sidecars_are_fatal() {
        let timed_out = SidecarError::TimedOut { method: "m".into(), after: Duration::from_millis(5) };
        let rpc = SidecarError::Rpc { method: "m".into(), code: -32602, message: "bad".into() };
        assert!(!timed_out.is_fatal() && !rpc.is_fatal());
        assert!(SidecarError::Protocol("x".into()).is_fatal());
        assert_eq!(rpc.to_string(), "m failed (-32602): bad");
    }
}
