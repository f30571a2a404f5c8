//! `tailship alert test`: one test alert and its resolve per rule, through the
//! rule's real webhook, printing what the service answered. One attempt each,
//! no retry, so a 403 or 429 shows as it is. The webhook URL is printed with
//! its key redacted.

use std::io::Write;

use anyhow::Context;

use crate::alert::sender::{Payload, Redactor, Sender, STATE_ALERTING, STATE_OK};
use crate::alert::template::Context as TemplateContext;
use crate::cli::{AlertArgs, AlertCommand, AlertTestArgs};
use crate::commands::CommandError;

pub fn alert(args: &AlertArgs) -> anyhow::Result<()> {
    match &args.command {
        AlertCommand::Test(a) => test(a),
    }
}

fn test(args: &AlertTestArgs) -> anyhow::Result<()> {
    let plan = crate::plan::load(&args.config)?;
    let (config, rules) = (&plan.config, &plan.rules);
    let selected: Vec<_> = rules.iter().filter(|r| args.rule.as_ref().is_none_or(|n| &r.name == n)).collect();
    if selected.is_empty() {
        let msg = match &args.rule {
            Some(n) => format!("no alert rule named `{n}` in {}", args.config.display()),
            None => format!("no [[alerts]] rules in {}", args.config.display()),
        };
        return Err(CommandError::usage(anyhow::anyhow!(msg)).into());
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let sender = Sender::new(&config.client, crate::client::retry::RetryPolicy::of(&config.client))
        .context("cannot build the HTTP client")?;
    let mut out = std::io::stdout().lock();
    let mut failed = 0;
    for rule in selected {
        let red = Redactor::new(&rule.webhook);
        writeln!(out, "rule {}: webhook {}", rule.name, red.shown())?;
        let labels = vec![("job".to_string(), "tailship-alert-test".to_string())];
        let uid = format!("{}-test", rule.alert_uid(&labels));
        let now_ms = (crate::util::now_ns() / 1_000_000) as i64;
        for state in [STATE_ALERTING, STATE_OK] {
            let line = "tailship alert test: this line matched nothing, it only checks the webhook";
            let ctx = TemplateContext {
                rule: &rule.name,
                count: u64::from(state == STATE_ALERTING),
                total: 1,
                first_line: line,
                last_line: line,
                since_ms: now_ms,
                last_match_ms: now_ms,
                opened_ms: now_ms,
                now_ms,
                labels: &labels,
                alert_uid: &uid,
                state,
            };
            let (title, message) = if state == STATE_OK {
                (rule.resolved_title.render(&ctx), rule.resolved_message.render(&ctx))
            } else {
                (rule.title.render(&ctx), rule.message.render(&ctx))
            };
            let payload = Payload {
                alert_uid: uid.clone(),
                title: format!("[test] {title}"),
                message,
                state,
                link_to_upstream_details: rule.link.as_ref().map(|t| t.render(&ctx)).unwrap_or_default(),
                image_url: rule.image_url.as_ref().map(|t| t.render(&ctx)),
            };
            match rt.block_on(sender.post_once(&rule.webhook, &payload)) {
                Ok((status, body)) => {
                    let ok = (200..300).contains(&status);
                    writeln!(out, "  {state:<8} -> {status} {}", if body.is_empty() { "(empty body)" } else { &body })?;
                    if !ok {
                        failed += 1;
                    }
                }
                Err(e) => {
                    writeln!(out, "  {state:<8} -> failed: {e}")?;
                    failed += 1;
                }
            }
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} test request(s) were not accepted");
    }
    Ok(())
}
