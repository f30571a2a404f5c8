//! `tailship cloud tokens ...`

use super::*;

pub(super) async fn tokens(client: &CloudClient, cmd: &TokenCommand, out: Output) -> anyhow::Result<()> {
    let mut w = std::io::stdout().lock();
    match cmd {
        TokenCommand::Create { region, policy_id, name, display_name, expires_at } => {
            let body = NewToken {
                access_policy_id: policy_id.clone(),
                name: name.clone(),
                display_name: display_name.clone(),
                expires_at: utc_flag(expires_at),
            };
            let v = client.create_token(region, &body).await.map_err(cloud_err)?;
            print_token(&mut w, &v, out)?;
            if out == Output::Table {
                eprintln!("tailship: this is the only time the token is shown; store it now");
            }
        }
        TokenCommand::List {
            region,
            policy_id,
            policy_name,
            realm_type,
            realm_id,
            name,
            expires_before,
            expires_after,
            policy_status,
            pages: Pages { page_size, limit },
        } => {
            let f = TokenFilter {
                access_policy_id: policy_id.clone(),
                access_policy_name: policy_name.clone(),
                access_policy_realm_type: realm_type.clone(),
                access_policy_realm_identifier: realm_id.clone(),
                name: name.clone(),
                expires_before: utc_flag(expires_before),
                expires_after: utc_flag(expires_after),
                access_policy_status: *policy_status,
                page_size: *page_size,
            };
            let items = client.list_tokens(region, &f, *limit).await.map_err(cloud_err)?;
            if out == Output::Json {
                return Ok(output::json(&mut w, &Value::Array(items))?);
            }
            let headers = ["ID", "NAME", "POLICY ID", "EXPIRES AT", "LAST USED AT"];
            print_rows(&mut w, &items, "a token", &headers, |t: Token| {
                vec![t.id, t.name, t.access_policy_id, cell(t.expires_at.as_deref()), cell(t.last_used_at.as_deref())]
            })?;
        }
        TokenCommand::Get(Record { id, region }) => {
            let v = client.get_token(region, id).await.map_err(cloud_err)?;
            print_token(&mut w, &v, out)?;
        }
        TokenCommand::Update { record: Record { id, region }, display_name, expires_at, no_expiry } => {
            let expires = if *no_expiry { Some(None) } else { utc_flag(expires_at).map(Some) };
            let body = TokenUpdate { display_name: display_name.clone(), expires_at: expires };
            let v = client.update_token(region, id, &body).await.map_err(cloud_err)?;
            print_token(&mut w, &v, out)?;
        }
        TokenCommand::Delete(Record { id, region }) => {
            client.delete_token(region, id).await.map_err(cloud_err)?;
            print_deleted(&mut w, out, "token", id)?;
        }
    }
    Ok(())
}
