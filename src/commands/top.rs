//! `tailship top`: a running agent's `/status.json`, every second, in the
//! terminal (files most behind first); `q`, Esc or Ctrl-C quits and gives the
//! terminal back as it was. When stdout is not a terminal it prints one plain
//! snapshot and exits. The views are in [`crate::status::view`].

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::Context;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use crate::cli::TopArgs;
use crate::client::http::{self, build_client, is_plain_http, ClientOptions, HttpError};
use crate::client::read::Cap;
use crate::status::report::Report;
use crate::status::view;

/// How often the view polls the agent.
const REFRESH: Duration = Duration::from_secs(1);
/// A poll that takes longer than this fails (and is shown as failed).
const POLL_TIMEOUT: Duration = Duration::from_millis(900);
/// Read-rate samples kept for the sparkline (one per poll: 5 minutes).
const HISTORY: usize = 300;

/// `url` as the status URL: an endpoint gets `/status.json` appended.
fn status_url(url: &str) -> String {
    let url = url.trim_end_matches('/');
    // `127.0.0.1:9080`, as `server.listen` is written: plain HTTP.
    let url = if url.contains("://") { url.to_string() } else { format!("http://{url}") };
    if url.ends_with("/status.json") {
        url.to_string()
    } else {
        format!("{url}/status.json")
    }
}

struct Poller {
    url: String,
    client: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

impl Poller {
    fn new(url: &str) -> anyhow::Result<Self> {
        let url = status_url(url);
        let opts = ClientOptions { timeout: Some(POLL_TIMEOUT), plain_http: is_plain_http(&url), ..Default::default() };
        let client = build_client(&opts)?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        Ok(Self { url, client, rt })
    }

    fn poll(&self) -> anyhow::Result<Report> {
        self.rt.block_on(async {
            let rb = self.client.get(&self.url);
            let body = http::fetch(rb, &self.url, Cap::Status).await.map_err(|e| match e {
                HttpError::TooLarge { .. } => anyhow::anyhow!(
                    "{} sent more than {} MiB: not a tailship status",
                    self.url,
                    Cap::Status.bytes() >> 20
                ),
                e => anyhow::Error::new(e),
            })?;
            serde_json::from_slice::<Report>(&body).with_context(|| format!("{} is not a tailship status", self.url))
        })
    }
}

pub fn top(args: &TopArgs) -> anyhow::Result<()> {
    let poller = Poller::new(&args.url)?;
    if !std::io::stdout().is_terminal() {
        let report = poller.poll()?;
        print!("{}", view::plain(&report));
        return Ok(());
    }
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let result = run(&mut terminal, &poller);
    ratatui::try_restore().context("cannot restore the terminal")?;
    result
}

/// Polls and draws until a quitting key.
fn run(terminal: &mut ratatui::DefaultTerminal, poller: &Poller) -> anyhow::Result<()> {
    let mut report: Option<Report> = None;
    let mut history: Vec<u64> = Vec::new();
    loop {
        let started = Instant::now();
        let error = match poller.poll() {
            Ok(r) => {
                let read: f64 = r.sources.iter().map(|s| s.lines_per_s).sum();
                if history.len() == HISTORY {
                    history.remove(0);
                }
                history.push(read.round() as u64);
                report = Some(r);
                None
            }
            Err(e) => Some(format!("{e:#}")),
        };
        terminal.draw(|f| view::draw(f, &poller.url, report.as_ref(), error.as_deref(), &history))?;
        // Keys until the next poll is due.
        loop {
            let left = REFRESH.saturating_sub(started.elapsed());
            if left.is_zero() {
                break;
            }
            if !event::poll(left)? {
                break;
            }
            match event::read()? {
                Event::Key(k) if k.kind == KeyEventKind::Press => {
                    let ctrl_c = k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c');
                    if ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) {
                        return Ok(());
                    }
                }
                Event::Resize(..) => {
                    terminal.draw(|f| view::draw(f, &poller.url, report.as_ref(), error.as_deref(), &history))?;
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_gets_the_status_path() {
        assert_eq!(status_url("http://127.0.0.1:9080"), "http://127.0.0.1:9080/status.json");
        assert_eq!(status_url("http://h/agent/"), "http://h/agent/status.json");
        assert_eq!(status_url("http://h/agent/status.json"), "http://h/agent/status.json");
    }

    /// `tailship top --url 127.0.0.1:9080` failed with "relative URL without a base".
    #[test]
    fn an_address_without_a_scheme_is_plain_http() {
        assert_eq!(status_url("127.0.0.1:9080"), "http://127.0.0.1:9080/status.json");
        assert_eq!(status_url("https://h:9080/"), "https://h:9080/status.json");
    }

    #[test]
    fn the_default_url_is_the_default_server_listen_on_loopback() {
        let listen = crate::config::ServerConfig::default().listen;
        assert!(listen.starts_with("127.0.0.1:"), "the endpoint stays on loopback by default");
        assert_eq!(crate::cli::DEFAULT_STATUS_URL, format!("http://{listen}"));
    }
}
