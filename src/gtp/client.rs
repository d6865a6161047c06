//! A client for any GTP engine: a child process (`sh -c "exec COMMAND"`) spoken to over its
//! stdin and stdout, one command at a time, each with an id. Never a hang and never a panic:
//! every answer is awaited at most the client's timeout (then the engine is killed), a dead
//! engine or a garbled answer is an error naming the engine, the command sent and the last
//! lines of the engine's stderr.

use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lines of the engine's stderr kept for error messages.
const STDERR_LINES: usize = 12;

/// Errors of a GTP engine spoken to as a client.
#[derive(Debug, thiserror::Error)]
pub enum GtpError {
    #[error("gtp engine `{command}` could not be started: {reason}")]
    Spawn { command: String, reason: String },
    /// The engine died, hung or answered something that is not a GTP response.
    #[error("gtp engine `{command}`: `{sent}` {problem}{}", stderr_tail(.stderr))]
    Engine {
        command: String,
        sent: String,
        problem: String,
        stderr: Vec<String>,
    },
    /// The engine answered the command with a failure (`? message`).
    #[error("gtp engine `{command}` refused `{sent}`: ? {message}")]
    Refused {
        command: String,
        sent: String,
        message: String,
    },
}

fn stderr_tail(lines: &[String]) -> String {
    if lines.is_empty() {
        "; its stderr is empty".to_string()
    } else {
        format!("; its stderr ends:\n  {}", lines.join("\n  "))
    }
}

/// A running GTP engine.
pub(crate) struct GtpClient {
    command: String,
    child: Child,
    /// Text for the engine's stdin, written by the writer thread ([`writer`]); `None` once
    /// the engine is stopped.
    stdin: Option<Sender<String>>,
    /// The result of each write.
    written: Receiver<std::io::Result<()>>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_reader: std::thread::JoinHandle<()>,
    timeout: Duration,
    next_id: u64,
}

impl std::fmt::Debug for GtpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GtpClient")
            .field("command", &self.command)
            .finish()
    }
}

impl GtpClient {
    /// Starts `command` (through `sh -c`, so it is looked up on PATH and may carry quoted
    /// arguments); each answer is awaited at most `timeout`.
    pub(crate) fn spawn(command: &str, timeout: Duration) -> Result<GtpClient, GtpError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {command}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| GtpError::Spawn {
                command: command.to_string(),
                reason: e.to_string(),
            })?;
        let (stdin, stdout, err) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(GtpError::Spawn {
                        command: command.to_string(),
                        reason: "its pipes could not be opened".into(),
                    });
                }
            };
        let (to_engine, texts) = channel();
        let (done, written) = channel();
        std::thread::spawn(move || writer(stdin, texts, done));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            // Lines capped (super::MAX_LINE): an engine that writes without end is cut off,
            // and the client's wait for its response ends in an error.
            let (mut out, mut line) = (BufReader::new(stdout), Vec::new());
            while let Ok((1.., false)) = super::read_line_capped(&mut out, &mut line, false) {
                let text = String::from_utf8_lossy(&line);
                let text = text.strip_suffix('\n').unwrap_or(&text);
                if tx
                    .send(text.strip_suffix('\r').unwrap_or(text).to_string())
                    .is_err()
                {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let kept = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            let (mut err, mut bytes) = (BufReader::new(err), Vec::new());
            while let Ok((1.., _)) = super::read_line_capped(&mut err, &mut bytes, false) {
                let line = String::from_utf8_lossy(&bytes).trim_end().to_string();
                if let Ok(mut k) = kept.lock() {
                    if k.len() == STDERR_LINES {
                        k.pop_front();
                    }
                    k.push_back(line);
                }
            }
        });
        Ok(GtpClient {
            command: command.to_string(),
            child,
            stdin: Some(to_engine),
            written,
            lines,
            stderr,
            stderr_reader,
            timeout,
            next_id: 1,
        })
    }

    /// The last lines the engine wrote to stderr: once the engine is gone, what the reader
    /// thread read up to the end of the pipe (waited for at most two seconds: a grandchild
    /// of the engine may hold the pipe open).
    fn stderr_lines(&self) -> Vec<String> {
        let until = Instant::now() + Duration::from_secs(2);
        while !self.stderr_reader.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stderr
            .lock()
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The error of an engine that misbehaved answering `sent` (the caller found its answer
    /// wrong): `problem` says how. The engine is killed.
    pub(crate) fn failure(&mut self, sent: &str, problem: String) -> GtpError {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stdin = None;
        GtpError::Engine {
            command: self.command.clone(),
            sent: sent.to_string(),
            problem,
            stderr: self.stderr_lines(),
        }
    }

    /// Sends `cmd` and returns the text of its success answer; a failure answer is
    /// [`GtpError::Refused`] (the engine keeps running), anything else kills the engine.
    pub(crate) fn send(&mut self, cmd: &str) -> Result<String, GtpError> {
        let id = self.next_id;
        self.next_id += 1;
        let stopped = || std::io::Error::other("the engine was stopped");
        let written = match &self.stdin {
            Some(stdin) if stdin.send(format!("{id} {cmd}\n")).is_ok() => self
                .written
                .recv_timeout(self.timeout)
                .unwrap_or_else(|_| Err(stopped())),
            _ => Err(stopped()),
        };
        if let Err(e) = written {
            return Err(self.failure(
                cmd,
                format!("could not be sent ({e}): the engine has exited"),
            ));
        }
        let deadline = Instant::now() + self.timeout;
        let mut text: Vec<String> = Vec::new();
        let mut success = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    let problem = format!(
                        "got no complete answer within {} s (the engine was killed)",
                        self.timeout.as_secs_f64()
                    );
                    return Err(self.failure(cmd, problem));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                    let problem = format!("got no answer: the engine exited ({status})");
                    return Err(self.failure(cmd, problem));
                }
            };
            let line = line.trim_end_matches('\r');
            match success {
                None if line.trim().is_empty() => continue,
                None => {
                    let mark = line.chars().next();
                    let rest = &line[mark.map_or(0, char::len_utf8)..];
                    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                    let (answer_id, rest) = rest.split_at(digits);
                    if !matches!(mark, Some('=') | Some('?')) {
                        let problem = format!("got `{line}`, which is not a GTP response");
                        return Err(self.failure(cmd, problem));
                    }
                    if !answer_id.is_empty() && answer_id != id.to_string() {
                        let problem = format!("(id {id}) got the answer `{line}` of another id");
                        return Err(self.failure(cmd, problem));
                    }
                    success = Some(mark == Some('='));
                    text.push(rest.trim().to_string());
                }
                Some(_) if line.trim().is_empty() => break,
                Some(_) => text.push(line.to_string()),
            }
        }
        let text = text.join("\n").trim().to_string();
        if success == Some(true) {
            Ok(text)
        } else {
            Err(GtpError::Refused {
                command: self.command.clone(),
                sent: cmd.to_string(),
                message: text,
            })
        }
    }
}

/// Writes each text to the engine's stdin and reports how it went, until the client drops
/// its sender or a write fails. SIGPIPE is blocked in this thread: the binary restores its
/// default action (so `tabula ... | head` stops quietly), which would otherwise kill tabula
/// when it writes to an engine that has died; blocked, the write fails with EPIPE instead and
/// the signal stays pending on this thread, which is discarded when the thread ends.
fn writer(mut stdin: ChildStdin, texts: Receiver<String>, done: Sender<std::io::Result<()>>) {
    #[cfg(unix)]
    // SAFETY: `set` is a local signal set initialised by sigemptyset before use, and
    // pthread_sigmask changes the mask of this thread only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    for text in texts {
        let r = stdin.write_all(text.as_bytes()).and_then(|_| stdin.flush());
        let failed = r.is_err();
        if done.send(r).is_err() || failed {
            return;
        }
    }
}

impl Drop for GtpClient {
    /// Asks the engine to quit, gives it a moment, then kills it.
    fn drop(&mut self) {
        if let Some(stdin) = self.stdin.take() {
            // Dropping the sender then ends the writer, which closes the engine's stdin.
            let _ = stdin.send("quit\n".to_string());
        }
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted engine: a shell loop that answers each line as `answer` says.
    fn engine(script: &str, timeout_ms: u64) -> GtpClient {
        GtpClient::spawn(
            &format!("sh -c '{script}'"),
            Duration::from_millis(timeout_ms),
        )
        .unwrap()
    }

    #[test]
    fn answers_failures_and_garbage() {
        // Answers `=ID ok` then `?ID no` alternately, echoing the id.
        let mut c = engine(
            r#"n=0; while read id rest; do n=$((n+1)); if [ $((n%2)) = 1 ]; then printf "=$id ok\n\n"; else printf "?$id no\n\n"; fi; done"#,
            5000,
        );
        assert_eq!(c.send("name").unwrap(), "ok");
        let e = c.send("genmove b").unwrap_err().to_string();
        assert!(e.contains("refused `genmove b`: ? no"), "{e}");
        assert_eq!(c.send("name").unwrap(), "ok");

        let mut c = engine(r#"read x; echo "hello"; echo >&2 "oops, bad day""#, 5000);
        let e = c.send("name").unwrap_err().to_string();
        assert!(
            e.contains("`name` got `hello`, which is not a GTP response"),
            "{e}"
        );
        assert!(e.contains("oops, bad day"), "{e}");
    }

    #[test]
    fn a_dead_or_hung_engine_is_an_error_not_a_hang() {
        let mut c = engine(r#"echo >&2 "no such board"; exit 3"#, 5000);
        let e = c.send("boardsize 9").unwrap_err().to_string();
        assert!(e.contains("exited"), "{e}");
        assert!(e.contains("no such board"), "{e}");
        // A second command to a dead engine is an error too.
        assert!(c.send("name").is_err());

        let mut c = engine("exec sleep 30", 300);
        let e = c.send("name").unwrap_err().to_string();
        assert!(e.contains("no complete answer within 0.3 s"), "{e}");

        let e = GtpClient::spawn("no-such-gtp-engine-here --mode gtp", Duration::from_secs(5))
            .unwrap()
            .send("name")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no-such-gtp-engine-here"), "{e}");
        assert!(e.contains("not found"), "{e}");
    }
}
