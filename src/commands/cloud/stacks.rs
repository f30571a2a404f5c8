//! `tailship cloud stacks ...`

use super::*;

fn parse_labels(flags: &[String]) -> Result<BTreeMap<String, String>, validate::Invalid> {
    let mut c = Checks::new();
    let mut m = BTreeMap::new();
    for f in flags {
        match validate::parse_key_value(f) {
            Ok((k, v)) => {
                if m.insert(k.clone(), v).is_some() {
                    c.fail(&format!("labels.{k}"), "given twice");
                }
            }
            Err(e) => c.fail("labels", e),
        }
    }
    c.finish().map(|()| m)
}

pub(super) async fn stacks(client: &CloudClient, cmd: &StackCommand, out: Output) -> anyhow::Result<()> {
    let mut w = std::io::stdout().lock();
    match cmd {
        StackCommand::List { org } => {
            let list = client.list_stacks(org).await.map_err(cloud_err)?;
            if let Some(total) = list.total {
                if total > list.items.len() as u64 {
                    tracing::warn!(
                        total,
                        shown = list.items.len(),
                        "the service reports more stacks than one answer holds; the spec shows no paging for this list"
                    );
                }
            }
            if out == Output::Json {
                return Ok(output::json(&mut w, &Value::Array(list.items))?);
            }
            let headers = ["SLUG", "ID", "NAME", "REGION", "STATUS", "DELETE PROTECTION", "LABELS", "URL"];
            print_rows(&mut w, &list.items, "a stack", &headers, |s: Stack| {
                vec![
                    s.slug,
                    s.id.to_string(),
                    s.name,
                    cell(Some(&s.region_slug)),
                    cell(Some(&s.status)),
                    s.delete_protection.to_string(),
                    labels_text(&s.labels),
                    cell(Some(&s.url)),
                ]
            })?;
        }
        StackCommand::Create { name, slug, region, url, description, labels, delete_protection } => {
            let labels = parse_labels(labels).map_err(|e| cloud_err(e.into()))?;
            let body = NewStack {
                name: name.clone(),
                slug: slug.clone(),
                url: url.clone(),
                region: region.clone(),
                description: description.clone(),
                labels: (!labels.is_empty()).then_some(labels),
                delete_protection: *delete_protection,
            };
            let v = client.create_stack(&body).await.map_err(cloud_err)?;
            print_stack(&mut w, &v, out)?;
        }
        StackCommand::Update { slug, name, description, labels, clear_labels, org, delete_protection } => {
            let given = parse_labels(labels).map_err(|e| cloud_err(e.into()))?;
            let mut body = StackUpdate {
                name: name.clone(),
                description: description.clone(),
                labels: None,
                delete_protection: *delete_protection,
            };
            if *clear_labels {
                body.labels = Some(BTreeMap::new());
            } else if !given.is_empty() {
                body.labels = Some(merged_labels(client, slug, org.as_deref(), given).await?);
            }
            let v = client.update_stack(slug, &body).await.map_err(cloud_err)?;
            print_stack(&mut w, &v, out)?;
        }
        StackCommand::Delete { slug } => {
            client.delete_stack(slug).await.map_err(cloud_err)?;
            print_deleted(&mut w, out, "stack", slug)?;
        }
        StackCommand::Connections { slug } => {
            let v = client.stack_connections(slug).await.map_err(cloud_err)?;
            if out == Output::Json {
                return Ok(output::json(&mut w, &v)?);
            }
            print_connections(&mut w, &v)?;
        }
    }
    Ok(())
}

/// The labels `stacks update --label` sends (checked first): the `given`
/// ones over the stack's current labels when `org` names where to read
/// them, else `given` alone (the service replaces the whole set).
async fn merged_labels(
    client: &CloudClient,
    slug: &str,
    org: Option<&str>,
    given: BTreeMap<String, String>,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut c = Checks::new();
    validate::stack_labels(&mut c, &given);
    c.finish().map_err(|e| cloud_err(e.into()))?;
    let Some(org) = org else {
        tracing::warn!("--label sets the complete label set: labels not listed are removed (pass --org to keep them)");
        return Ok(given);
    };
    let list = client.list_stacks(org).await.map_err(cloud_err)?;
    let raw = list
        .items
        .iter()
        .find(|s| s.get("slug").and_then(Value::as_str) == Some(slug))
        .ok_or_else(|| anyhow::anyhow!("stack `{slug}` is not in the stack list of org `{org}`"))?;
    let current: Stack = parse(raw, "a stack")?;
    let mut m = current.labels;
    m.extend(given);
    Ok(m)
}
