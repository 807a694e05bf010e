//! Writing results to stdout. A closed pipe (`atlas ls | head`) ends the
//! output quietly instead of panicking.

use std::io::Write;

/// Writes `text` to stdout as it is.
pub fn text(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        closed_or_exit(&e);
    }
}

/// Writes `value` to stdout as pretty JSON and a newline.
pub fn json(value: &serde_json::Value) {
    let mut rendered = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_owned());
    rendered.push('\n');
    text(&rendered);
}

/// Writes `value` to stdout as one line of JSON (bulk data: `cat`).
pub fn json_line(value: &serde_json::Value) {
    let mut rendered = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
    rendered.push('\n');
    text(&rendered);
}

fn closed_or_exit(e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        // The reader went away: nothing left to say to it.
        std::process::exit(0);
    }
    eprintln!("error: cannot write to stdout: {e}");
    std::process::exit(1);
}
