//! `atlas`: inspect, read, verify, delete and rewrite Atlas collections.
//!
//! Exit status: 0 success, 1 a problem with the collection or the request
//! (one line on stderr names it), 2 a usage error, 75 storage unreachable or
//! busy through every retry, or a set commit that lost every race (try again later).

mod cli;
mod commands;
mod exit;
mod json;
mod location;
mod output;
mod progress;
mod render;
mod values;

use std::process::ExitCode;
use std::sync::Mutex;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use crate::cli::Cli;

/// The message of the last panic, kept for the one-line report (see [`main`]).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = init_tracing(cli.global.log_level.as_deref()) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }

    // A panic the library catches and turns into an error must not print; one
    // that escapes is reported below as one line, never as a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::debug!("panic{location}: {message}");
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(message);
        }
    }));

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };

    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(commands::run(cli))
    }));
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            // The whole chain, each cause once, before the one line.
            tracing::debug!("error: {}", e.chain());
            eprintln!("error: {}", e.line());
            if let Some(detail) = e.detail() {
                eprintln!("{detail}");
            }
            e.exit_code()
        }
        Err(_) => {
            let message = LAST_PANIC
                .lock()
                .ok()
                .and_then(|mut m| m.take())
                .unwrap_or_else(|| "unknown panic".to_owned());
            eprintln!(
                "error: internal error: {} (please report this)",
                exit::one_line(&message)
            );
            ExitCode::from(1)
        }
    }
}

/// Diagnostics go to stderr. `--log-level` wins over `RUST_LOG`; with neither, nothing is logged
/// (so an error stays one line).
fn init_tracing(level: Option<&str>) -> Result<(), String> {
    let filter = match level {
        Some(level) => {
            EnvFilter::try_new(level).map_err(|e| format!("invalid --log-level {level:?}: {e}"))?
        }
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("off")),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init()
        .map_err(|e| e.to_string())
}
